import type { Step } from '../../plan/plan-schema.js';
import type { RecoveryDecision } from '../engine-policy.js';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Accepts what a recovery hook returned, or `undefined` when it is not a decision (the default
 * failure policy then applies). Hooks are often LLM-driven, so their answers are checked, not trusted.
 */
export function normalizeDecision(value: unknown): RecoveryDecision | undefined {
  if (!isPlainObject(value)) return undefined;
  const reason = typeof value.reason === 'string' && value.reason.length > 0 ? value.reason : undefined;
  const withReason = reason === undefined ? {} : { reason };
  switch (value.action) {
    case 'retry':
      if (value.args !== undefined && !isPlainObject(value.args)) return undefined;
      return { action: 'retry', ...(value.args === undefined ? {} : { args: value.args }), ...withReason };
    case 'skip':
      return { action: 'skip', ...withReason };
    case 'abort':
      return { action: 'abort', ...withReason };
    case 'insert': {
      if (!Array.isArray(value.steps) || value.steps.length === 0 || !value.steps.every(isPlainObject))
        return undefined;
      if (value.afterwards !== undefined && value.afterwards !== 'retry' && value.afterwards !== 'skip')
        return undefined;
      const afterwards = value.afterwards === 'skip' ? { afterwards: 'skip' as const } : {};
      return { action: 'insert', steps: value.steps as unknown as Step[], ...afterwards, ...withReason };
    }
    default:
      return undefined;
  }
}

import type { Effect } from '../tools/define-tool.js';

/**
 * What happens when a tool of some effect is about to run. `pause`: the request is journaled, the
 * step does not run and the run ends `waiting`; `respond()` answers it later, `resume` continues.
 */
export type ApprovalMode = 'auto' | 'prompt' | 'deny' | 'pause';

export interface ApprovalPolicy {
  /** Per effect. Defaults: read/write `auto`, exec/destructive/network `prompt`. */
  readonly effects?: Readonly<Partial<Record<Effect, ApprovalMode>>>;
  /** Per tool name; wins over `effects`. */
  readonly tools?: Readonly<Record<string, ApprovalMode>>;
  /** What `prompt` becomes when there is no handler (CI, `--json`): default `deny`; `pause` waits for `respond()`. */
  readonly nonInteractive?: 'auto' | 'deny' | 'pause';
}

export interface ApprovalRequest {
  readonly runId: string;
  readonly stepId: string;
  readonly executionId: string;
  readonly tool: string;
  readonly effect: Effect;
  /** Arguments after redaction: show these to people. */
  readonly args: Record<string, unknown>;
  readonly description: string | undefined;
  /** `step`: the plan marked the step requiresApproval; `policy`: the effect policy says prompt. */
  readonly reason: 'step' | 'policy';
  readonly signal: AbortSignal;
}

export interface ApprovalDecision {
  readonly decision: 'approve' | 'deny' | 'skip';
  /** Who decided; journaled. */
  readonly by?: string;
  readonly reason?: string;
}

/** Asks a person (or a policy service). `true`/`false` are shorthand for approve/deny. */
export type ApprovalHandler = (request: ApprovalRequest) => Promise<ApprovalDecision | boolean>;

export interface ApprovalOptions {
  readonly policy?: ApprovalPolicy;
  readonly handler?: ApprovalHandler;
}

export const DEFAULT_EFFECT_MODES: Readonly<Record<Effect, ApprovalMode>> = {
  read: 'auto',
  write: 'auto',
  exec: 'prompt',
  destructive: 'prompt',
  network: 'prompt',
};

/** The mode for one call: a step's `requiresApproval` always prompts. */
export function approvalModeFor(
  policy: ApprovalPolicy | undefined,
  tool: string,
  effect: Effect,
  requiresApproval: boolean,
): { mode: ApprovalMode; reason: 'step' | 'policy' } {
  const configured = policy?.tools?.[tool] ?? policy?.effects?.[effect] ?? DEFAULT_EFFECT_MODES[effect];
  if (configured === 'deny') return { mode: 'deny', reason: 'policy' };
  if (requiresApproval) return { mode: configured === 'pause' ? 'pause' : 'prompt', reason: 'step' };
  return { mode: configured, reason: 'policy' };
}

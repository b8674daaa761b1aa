import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';

const STEP_EVENTS = new Set([
  'step-start',
  'tool-call',
  'tool-result',
  'approval-decision',
  'step-retry',
  'model-call',
  'step-end',
]);
const EXECUTION_EVENTS = new Set(['tool-call', 'tool-result', 'approval-decision']);

function badEvent(runId: string, index: number, seq: unknown, message: string): StepwiseError {
  return new StepwiseError(ErrorCodes.INPUT_INVALID, `event ${index} of the batch for run ${runId} ${message}`, {
    location: `${runId}#${String(seq)}`,
  });
}

/**
 * A store's first check on `append` input, before any write: what the projections read from an
 * event must be there; the journal takes anything else as is. Every store calls it, so a bad batch
 * gets the same E-code and location whichever store is behind the run.
 */
export function checkEvents(
  runId: unknown,
  events: unknown,
  /** `datedTimes`: `at` must parse as a date (a store with a timestamp column); otherwise any string is kept as is. */
  options: { readonly datedTimes?: boolean } = {},
): asserts events is readonly RunEvent[] {
  if (typeof runId !== 'string' || runId.length === 0) {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, 'append needs a run id (a non-empty string)', {
      location: 'runId',
    });
  }
  if (!Array.isArray(events)) {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `append for run ${runId} needs an array of events`, {
      location: runId,
    });
  }
  events.forEach((event: unknown, index) => {
    if (typeof event !== 'object' || event === null) throw badEvent(runId, index, '?', 'is not an object');
    const record = event as Record<string, unknown>;
    const { type, seq } = record;
    if (typeof type !== 'string' || type.length === 0) throw badEvent(runId, index, seq, 'has no type');
    if (typeof record.at !== 'string') throw badEvent(runId, index, seq, 'has no `at` time');
    if (options.datedTimes && Number.isNaN(Date.parse(record.at)))
      throw badEvent(runId, index, seq, 'has no valid `at` time');
    // Any event that names a step (extension events included) names it with a string.
    if ((STEP_EVENTS.has(type) || 'stepId' in record) && typeof record.stepId !== 'string') {
      throw badEvent(runId, index, seq, `(${type}) has no stepId`);
    }
    if (EXECUTION_EVENTS.has(type) && typeof record.executionId !== 'string') {
      throw badEvent(runId, index, seq, `(${type}) has no executionId`);
    }
    if (type === 'run-start') {
      const steps = (record.plan as { steps?: unknown } | undefined)?.steps;
      if (
        !Array.isArray(steps) ||
        !steps.every((step) => typeof step === 'object' && step !== null && typeof step.id === 'string')
      ) {
        throw badEvent(runId, index, seq, '(run-start) has no plan with steps');
      }
    }
    if (type === 'step-end' && (typeof record.result !== 'object' || record.result === null)) {
      throw badEvent(runId, index, seq, '(step-end) has no result');
    }
  });
}

import { ErrorCodes, type RunEvent, StepwiseError } from '@stepwise/core';

function badEvent(runId: string, index: number, seq: unknown, message: string): StepwiseError {
  return new StepwiseError(ErrorCodes.INPUT_INVALID, `event ${index} of the batch for run ${runId} ${message}`, {
    location: `${runId}#${String(seq)}`,
  });
}

/** What the journal and projections need of every event; everything else is stored as given. */
export function checkEvents(runId: unknown, events: unknown): asserts events is readonly RunEvent[] {
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
    const { type, seq, at } = event as Record<string, unknown>;
    if (typeof type !== 'string' || type.length === 0) throw badEvent(runId, index, seq, 'has no type');
    if (typeof at !== 'string' || Number.isNaN(Date.parse(at)))
      throw badEvent(runId, index, seq, 'has no valid `at` time');
    if (type === 'run-start') {
      const steps = (event as { plan?: { steps?: unknown } }).plan?.steps;
      if (!Array.isArray(steps)) throw badEvent(runId, index, seq, '(run-start) has no plan with steps');
    }
  });
}

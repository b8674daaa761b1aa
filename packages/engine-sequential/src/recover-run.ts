import {
  endStep,
  type FoldedRun,
  type InterruptedAction,
  interruptedAction,
  interruptedError,
  type Plan,
  type RunJournal,
  type Step,
  type StepResult,
  type StepState,
} from '@stepwise/core';

/** A step a crash left between `step-start` and `step-end`, and what resume does with it. */
export interface InFlightStep {
  readonly index: number;
  readonly step: Step;
  readonly state: StepState;
  readonly action: InterruptedAction;
}

/** Where an unfinished run stands, read from its fold. */
export interface RunProgress {
  /** Results of the steps that succeeded, in plan order, up to the first that did not. */
  readonly completed: StepResult[];
  /** A journaled result that did not succeed: the run had stopped, only its `run-end` is missing. */
  readonly stopped: StepResult | undefined;
  readonly inFlight: InFlightStep | undefined;
}

/**
 * Walks the plan in order. Strict runs one step at a time, so at most one step can be in
 * flight and every step after the first unfinished one is still pending.
 */
export function runProgress(plan: Plan, run: FoldedRun, allowRerunInterrupted: boolean): RunProgress {
  const completed: StepResult[] = [];
  for (const [index, step] of plan.steps.entries()) {
    const state = run.steps.get(step.id);
    if (state?.result) {
      if (state.result.status === 'succeeded') {
        completed.push(state.result);
        continue;
      }
      return { completed, stopped: state.result, inFlight: undefined };
    }
    if (state && state.status === 'running') {
      const action = interruptedAction(state, allowRerunInterrupted);
      return { completed, stopped: undefined, inFlight: { index, step, state, action } };
    }
    break;
  }
  return { completed, stopped: undefined, inFlight: undefined };
}

function toolStatus(status: string): 'succeeded' | 'failed' | 'cancelled' {
  return status === 'succeeded' || status === 'cancelled' ? status : 'failed';
}

/**
 * Journals the `step-end` of a step a crash left in flight: from its journaled tool result
 * (`finish`), or as interrupted (`fail`, E309). `rerun` steps are not ended here: they run again.
 */
export function endInterruptedStep(inFlight: InFlightStep, run: FoldedRun, journal: RunJournal): Promise<StepResult> {
  const { step, state } = inFlight;
  const executionId = state.executionId as string;
  const tool = state.toolResult;
  const execution = run.executions.get(executionId);
  const outcome =
    inFlight.action === 'finish' && tool
      ? {
          status: toolStatus(tool.status),
          output: tool.output,
          ...(tool.error ? { error: tool.error } : {}),
          artifacts: execution?.artifacts ?? [],
        }
      : { status: 'failed' as const, error: interruptedError(step.id), artifacts: [] };
  // The step's duration is its tool's, not the time since the crash.
  const started = performance.now() - (execution?.durationMs ?? 0);
  const startedAt = state.startedAt ?? new Date().toISOString();
  return endStep(step, state.attempt, executionId, startedAt, started, outcome, { journal });
}

import type { StepError, TokenUsage } from '@stepwise/core';
import type { StepState } from '@stepwise/core/store';

/** One step of a run as the `steps` projection holds it (what `listSteps` returns). */
export interface StepRecord {
  readonly runId: string;
  readonly stepId: string;
  /** pending | running | retrying | succeeded | failed | skipped | denied | cancelled */
  readonly status: StepState['status'];
  /** The current (or last) attempt; 0 before the first start. */
  readonly attempt: number;
  readonly tool: string | undefined;
  /** The plan's description of the step. */
  readonly description: string | undefined;
  readonly executionId: string | undefined;
  readonly startedAt: string | undefined;
  /** When the step-end was journaled; `undefined` while the attempt is open. */
  readonly endedAt: string | undefined;
  readonly durationMs: number | undefined;
  /** The current attempt journaled a tool-call: its tool may have run. */
  readonly toolCalled: boolean;
  readonly idempotent: boolean | undefined;
  /** The step result's output (after redaction). */
  readonly output: unknown;
  readonly error: StepError | undefined;
  /** Tokens the step's model calls spent. */
  readonly usage: TokenUsage | undefined;
}

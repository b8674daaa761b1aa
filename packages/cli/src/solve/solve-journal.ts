import {
  ErrorCodes,
  type JournalKey,
  type Plan,
  type PlanRevision,
  type RunResult,
  type RunStore,
  type StepResult,
} from '@stepwise/core';
import {
  deriveExecutionId,
  finishRun,
  newRunId,
  planReviseEvent,
  type RunJournal,
  startRun,
} from '@stepwise/core/engine';
import type { ModelCallEvent, PlanReviseEvent, WorkspaceChangeList } from '@stepwise/core/store';
import type { ValidationResult } from './run-validation.js';

/** The engine name of a code-agent run in the journal (`stepwise show` lists its attempts). */
export const SOLVE_ENGINE = 'solve';

/** What one attempt did, as the solve loop hands it to the journal. */
export interface AttemptRecord {
  readonly stepId: string;
  readonly attempt: number;
  readonly implementationRunId: string;
  readonly status: 'succeeded' | 'failed';
  readonly error?: string;
  readonly validation: ValidationResult;
  readonly changes: WorkspaceChangeList;
  /** What the rollback undid, when the attempt was rolled back. */
  readonly rollback?: WorkspaceChangeList;
}

const lists = (changes: WorkspaceChangeList): WorkspaceChangeList => ({
  created: [...changes.created],
  modified: [...changes.modified],
  deleted: [...changes.deleted],
});

/**
 * The code agent's own run: its plan, one `step-start` / `step-end` per attempt of a step, the
 * validation, rollback and attempt of each (`validation-end`, `workspace-rollback`, `attempt-end`),
 * and the plan revisions (`plan-revise`). The implementation and validation runs are its children.
 */
export class SolveJournal {
  readonly #journal: RunJournal;
  readonly #startedAt = Date.now();
  #plan: Plan;
  #digest: string | undefined;
  readonly #results = new Map<string, StepResult>();
  readonly #revisions: PlanReviseEvent[] = [];
  readonly #attemptStarts = new Map<string, { at: string; clock: number }>();

  private constructor(journal: RunJournal, plan: Plan) {
    this.#journal = journal;
    this.#plan = plan;
  }

  /** `plannerCalls`: the planner's model calls (`plannerCallEvent`), journaled right after `run-start`. */
  static async open(
    store: RunStore,
    plan: Plan,
    plannerCalls: readonly Omit<ModelCallEvent, 'seq' | 'at' | 'runId'>[] = [],
    journalKey?: JournalKey,
  ): Promise<SolveJournal> {
    const journal = await startRun({
      store,
      runId: newRunId(),
      plan,
      engine: SOLVE_ENGINE,
      ...(journalKey === undefined ? {} : { journalKey }),
    });
    for (const call of plannerCalls) journal.emit(call);
    await journal.flush();
    return new SolveJournal(journal, plan);
  }

  /** The run's journal, for the model calls of a replan (`replanRemaining` journals them itself). */
  get runJournal(): RunJournal {
    return this.#journal;
  }

  get runId(): string {
    return this.#journal.runId;
  }

  async attemptStart(stepId: string, attempt: number): Promise<void> {
    this.#attemptStarts.set(stepId, { at: new Date().toISOString(), clock: performance.now() });
    await this.#journal.record({
      type: 'step-start',
      stepId,
      tool: undefined,
      attempt,
      executionId: deriveExecutionId(this.runId, stepId, attempt),
    });
  }

  /** Journals the attempt's validation, its rollback (if any), the attempt, and the step's end for this attempt. */
  async attemptEnd(record: AttemptRecord): Promise<void> {
    const { stepId, attempt, validation } = record;
    this.#journal.emit({
      type: 'validation-end',
      stepId,
      attempt,
      validationRunId: validation.runId,
      command: [...validation.command],
      exitCode: validation.exitCode,
      passed: validation.passed,
      failingTests: validation.failingTests.map((test) => ({
        name: test.name,
        ...(test.file ? { file: test.file } : {}),
        output: test.output,
      })),
      output: validation.output,
      ...(validation.error ? { error: validation.error } : {}),
    });
    if (record.rollback) {
      this.#journal.emit({
        type: 'workspace-rollback',
        stepId,
        attempt,
        restored: [...record.rollback.modified, ...record.rollback.deleted],
        removed: [...record.rollback.created],
      });
    }
    this.#journal.emit({
      type: 'attempt-end',
      stepId,
      attempt,
      implementationRunId: record.implementationRunId,
      status: record.status,
      ...(record.error === undefined ? {} : { error: record.error }),
      changes: lists(record.changes),
      rolledBack: record.rollback !== undefined,
    });
    const solved = record.status === 'succeeded' && validation.passed;
    const started = this.#attemptStarts.get(stepId) ?? { at: new Date().toISOString(), clock: performance.now() };
    const why = record.error ?? `\`${validation.command.join(' ')}\` ${validation.error ?? 'failed'}`;
    const result: StepResult = {
      stepId,
      tool: undefined,
      status: solved ? 'succeeded' : 'failed',
      output: { implementationRunId: record.implementationRunId, validationRunId: validation.runId },
      ...(solved
        ? {}
        : {
            error: {
              code: record.error ? ErrorCodes.TOOL_FAILED : ErrorCodes.TOOL_COMMAND_FAILED,
              message: `attempt ${attempt}: ${why}`,
              retryable: false,
            },
          }),
      executionId: deriveExecutionId(this.runId, stepId, attempt),
      attempt,
      startedAt: started.at,
      durationMs: Math.round(performance.now() - started.clock),
    };
    this.#results.set(stepId, result);
    await this.#journal.record({ type: 'step-end', stepId, result });
  }

  async revise(revision: PlanRevision, reason: string): Promise<void> {
    this.#revisions.push(
      (await this.#journal.record(planReviseEvent(revision, SOLVE_ENGINE, reason))) as PlanReviseEvent,
    );
    this.#plan = revision.plan;
    this.#digest = revision.digest;
  }

  /** Journals `run-end` (completed when solved, else failed) and releases the run. */
  finish(solved: boolean): Promise<RunResult> {
    const steps = this.#plan.steps
      .map((step) => this.#results.get(step.id))
      .filter((result): result is StepResult => result !== undefined);
    return finishRun(this.#journal, {
      plan: this.#plan,
      engine: SOLVE_ENGINE,
      status: solved ? 'completed' : 'failed',
      steps,
      durationMs: Date.now() - this.#startedAt,
      ...(this.#digest ? { planDigest: this.#digest } : {}),
      revisions: this.#revisions,
    });
  }

  /** An error ended the loop: the run ends `failed` so it is not left `running`. */
  async abandon(): Promise<void> {
    await this.finish(false).catch(() => undefined);
  }
}

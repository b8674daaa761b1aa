import { ErrorCodes, type RunStore, type Step, type StepError } from '@stepwise/core';
import type { GoalStepRequest, KernelContext } from '@stepwise/core/engine';
import { attemptFeedback, type ValidationSummary } from './attempt-feedback.js';
import { type AttemptHistory, type AttemptRecords, readAttemptHistory } from './attempt-history.js';
import type { WorkspaceChangeList } from './code-agent-events.js';
import { runValidation, type ValidationCommand, type ValidationResult } from './run-validation.js';
import { type TransactionSettings, WorkspaceTransaction } from './workspace-transaction.js';

/** The tools a goal step may use to implement a change (run_command only for allowed programs). */
export const IMPLEMENTATION_TOOLS: readonly string[] = [
  'file_read',
  'file_search',
  'file_glob',
  'dir_list',
  'file_edit',
  'file_create',
  'run_command',
];

/** How an attempt's model loop (or the attempt) ended, as the goal-step executor hands it over. */
export interface AttemptOutcome {
  readonly status: 'succeeded' | 'failed' | 'denied' | 'skipped' | 'cancelled' | 'waiting';
  readonly output?: unknown;
  readonly error?: StepError;
}

/** The hooks the model loop runs around each attempt (`GoalAttemptHooks` of `@stepwise/engine-agentic`). */
export interface AttemptHooks {
  begin(request: GoalStepRequest): Promise<{ readonly step?: Step; readonly outcome?: AttemptOutcome }>;
  end(request: GoalStepRequest, outcome: AttemptOutcome, signal: AbortSignal): Promise<AttemptOutcome>;
}

/** One attempt as it ended, with its validation and rollback (from the journal). */
export interface AttemptReport {
  readonly stepId: string;
  readonly attempt: number;
  readonly revision: number;
  readonly status: 'succeeded' | 'failed';
  readonly error?: string;
  readonly validations: readonly ValidationSummary[];
  readonly changes: WorkspaceChangeList;
  readonly rolledBack: boolean;
  readonly rollback?: { readonly restored: readonly string[]; readonly removed: readonly string[] };
}

export interface AttemptSettings {
  readonly store: RunStore;
  readonly transaction: TransactionSettings;
  readonly validation: readonly ValidationCommand[];
  readonly validateTimeoutMs: number;
  /** The task, for a step without a description. */
  readonly task: string;
  readonly onAttemptStart?: (stepId: string, attempt: number) => void;
  readonly onAttemptEnd?: (attempt: AttemptReport, runId: string) => void;
}

interface OpenAttempt {
  /** The number of the process working on the run (1, then one more per resume). */
  readonly session: number;
  readonly records: AttemptRecords | undefined;
  transaction?: WorkspaceTransaction;
}

/** The attempt as the journal recorded it, for reports and progress. */
export function attemptReport(records: AttemptRecords): AttemptReport | undefined {
  const { end } = records;
  if (!end) return undefined;
  return {
    stepId: records.stepId,
    attempt: records.attempt,
    revision: end.revision ?? 0,
    status: end.status,
    ...(end.error === undefined ? {} : { error: end.error }),
    validations: records.validations,
    changes: end.changes,
    rolledBack: end.rolledBack,
    ...(records.rollback
      ? { rollback: { restored: records.rollback.restored, removed: records.rollback.removed } }
      : {}),
  };
}

/** The step as the model sees it in this attempt: what each earlier attempt of it changed and why it failed. */
function describeStep(settings: AttemptSettings, step: Step, history: AttemptHistory, attempt: number): Step {
  const feedback = history.attempts
    .filter((records) => records.stepId === step.id && records.attempt < attempt && records.end?.rolledBack)
    .map((records) =>
      attemptFeedback({
        attempt: records.attempt,
        ...(records.end?.error === undefined ? {} : { implementationError: records.end.error }),
        validations: records.validations,
        changes: records.end?.changes ?? { created: [], modified: [], deleted: [] },
      }),
    );
  return {
    ...step,
    description: [step.description ?? settings.task, ...feedback].join('\n\n'),
    tools: step.tools ?? [...IMPLEMENTATION_TOOLS],
  };
}

/** The journaled end of an attempt, as the outcome of the step's attempt (a crash came between the two). */
function settledOutcome(records: AttemptRecords): AttemptOutcome {
  const end = records.end as NonNullable<AttemptRecords['end']>;
  if (!end.rolledBack) return { status: 'succeeded', output: { changes: end.changes } };
  return { status: 'failed', error: attemptError(records.stepId, records.attempt, end.error, records.validations) };
}

function attemptError(
  stepId: string,
  attempt: number,
  implementationError: string | undefined,
  validations: readonly ValidationSummary[],
): StepError {
  const failed = validations.find((validation) => !validation.passed && !validation.optional);
  const why =
    implementationError ??
    (failed ? `\`${failed.command.join(' ')}\` ${failed.error ?? 'failed'}` : 'the attempt was not validated');
  return {
    code: implementationError ? ErrorCodes.TOOL_FAILED : ErrorCodes.TOOL_COMMAND_FAILED,
    message: `attempt ${attempt}: ${why}`,
    // The scheduler's retry policy decides whether another attempt follows (maxAttempts).
    retryable: true,
    location: stepId,
  };
}

/** Runs the validation commands the journal does not already hold for this attempt (a crash came in between). */
async function validate(
  settings: AttemptSettings,
  request: GoalStepRequest,
  kernel: KernelContext,
  state: OpenAttempt,
): Promise<ValidationSummary[]> {
  const { step, attempt } = request;
  const journaled = new Map((state.records?.validations ?? []).map((event) => [event.name ?? 'test', event]));
  const results: ValidationSummary[] = [];
  for (const command of settings.validation) {
    const known = journaled.get(command.name);
    if (known) {
      results.push(known);
      continue;
    }
    if (kernel.signal?.aborted) break;
    const scope = { kernel, stepId: step.id, attempt, session: state.session, timeoutMs: settings.validateTimeoutMs };
    const result = await runValidation(scope, command);
    await kernel.journal.record(validationEvent(step.id, attempt, request.plan.revision ?? 0, result));
    results.push(result);
  }
  return results;
}

function validationEvent(stepId: string, attempt: number, revision: number, validation: ValidationResult) {
  return {
    type: 'validation-end' as const,
    stepId,
    attempt,
    revision,
    name: validation.name,
    ...(validation.optional ? { optional: true } : {}),
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
  };
}

/**
 * The code agent's attempt: before the model loop, the workspace checkpoint (saved on disk,
 * journaled); after it, the validation commands through the kernel, a rollback unless the attempt
 * stands, and `attempt-end`. A failed attempt fails the step with a retryable error, so the
 * scheduler's retry policy runs the next one; its prompt carries what failed (read from the journal).
 * An attempt a crash interrupted is not continued: what it left in the workspace is validated, and
 * rolled back when it fails.
 */
export function codeAgentAttempt(settings: AttemptSettings): AttemptHooks {
  const open = new Map<string, OpenAttempt>();
  const keyOf = (request: GoalStepRequest) => `${request.kernel.runId}/${request.step.id}/${request.attempt}`;
  return {
    async begin(request) {
      const { kernel, step, attempt } = request;
      const history = await readAttemptHistory(settings.store, kernel.runId);
      const described = describeStep(settings, step, history, attempt);
      const records = history.get(step.id, attempt);
      const state: OpenAttempt = { session: history.resumes + 1, records };
      open.set(keyOf(request), state);
      settings.onAttemptStart?.(step.id, attempt);
      if (records?.end) return { step: described, outcome: settledOutcome(records) };
      if (records?.checkpoint) {
        state.transaction = await WorkspaceTransaction.reopen(settings.transaction, records.checkpoint);
        // Answered by a person (it ended `waiting`): the model loop goes on from its journaled turns.
        if (request.resumed?.steps.get(step.id)?.status === 'waiting') return { step: described };
        return { step: described, outcome: { status: 'succeeded', output: { interrupted: true } } };
      }
      state.transaction = await WorkspaceTransaction.begin(settings.transaction, request);
      return { step: described };
    },
    async end(request, outcome, signal) {
      const state = open.get(keyOf(request));
      open.delete(keyOf(request));
      // Waiting for a person: the attempt stays open (its checkpoint on disk) until the run continues.
      if (!state?.transaction || outcome.status === 'waiting') return outcome;
      return settle(settings, request, outcome, { ...request.kernel, signal }, state);
    },
  };
}

/** Validates, rolls back unless the attempt stands, and journals the attempt's end. */
async function settle(
  settings: AttemptSettings,
  request: GoalStepRequest,
  outcome: AttemptOutcome,
  kernel: KernelContext,
  state: OpenAttempt,
): Promise<AttemptOutcome> {
  const { step, attempt } = request;
  const revision = request.plan.revision ?? 0;
  const transaction = state.transaction as WorkspaceTransaction;
  const changes = await transaction.changes();
  const stopped = kernel.signal?.aborted === true || outcome.status === 'cancelled';
  const validations = stopped ? [] : await validate(settings, request, kernel, state);
  const validated = validations.length > 0 && validations.every((each) => each.passed || each.optional);
  const solved = !stopped && outcome.status === 'succeeded' && validated;
  const rollback = solved ? undefined : await transaction.rollback();
  if (rollback) {
    kernel.journal.emit({
      type: 'workspace-rollback',
      stepId: step.id,
      attempt,
      revision,
      restored: [...rollback.modified, ...rollback.deleted],
      removed: [...rollback.created],
    });
  }
  const implementationError = outcome.status === 'succeeded' ? undefined : (outcome.error?.message ?? outcome.status);
  await kernel.journal.record({
    type: 'attempt-end',
    stepId: step.id,
    attempt,
    revision,
    implementationRunId: kernel.runId,
    status: outcome.status === 'succeeded' ? 'succeeded' : 'failed',
    ...(implementationError === undefined ? {} : { error: implementationError }),
    changes: { created: [...changes.created], modified: [...changes.modified], deleted: [...changes.deleted] },
    rolledBack: rollback !== undefined,
  });
  await transaction.close();
  const records = (await readAttemptHistory(settings.store, kernel.runId)).get(step.id, attempt);
  const report = records ? attemptReport(records) : undefined;
  if (report) settings.onAttemptEnd?.(report, kernel.runId);
  if (solved) return { status: 'succeeded', output: { changes, validated: validations.map((each) => each.name) } };
  if (stopped) return outcome.status === 'cancelled' ? outcome : { status: 'cancelled', ...withError(outcome) };
  return { status: 'failed', error: attemptError(step.id, attempt, implementationError, validations) };
}

function withError(outcome: AttemptOutcome): { error?: StepError } {
  return outcome.error ? { error: outcome.error } : {};
}

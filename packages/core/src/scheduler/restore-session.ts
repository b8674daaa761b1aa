import type { StepResult } from '../journal/events.js';
import type { FoldedRun } from '../journal/fold-run.js';
import type { RunJournal } from '../journal/journal.js';
import { endStep, type KernelContext } from '../kernel/invoke-step.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import { interruptedError } from '../run/run-session.js';
import { type AdjustOutcome, type AdjustScope, adjustAfterStep, adjustThenAdvance } from './adjust-run.js';
import type { EnginePolicy } from './engine-policy.js';
import { type FailurePolicy, stopsRun } from './failure-policy.js';
import { reconcileStep } from './reconcile-step.js';
import type { RestoredStep } from './resume-state.js';
import type { RunLoop } from './run-loop.js';
import type { SessionControl } from './session-control.js';
import type { Slot, StepBoard } from './step-board.js';
import { letsDependentsRun } from './step-outcome.js';

/** What restoring a session needs: its board, journal and state, the loop, and the failure policy. */
export interface RestoreScope {
  readonly board: StepBoard;
  readonly journal: RunJournal;
  readonly control: SessionControl;
  readonly policy: Pick<EnginePolicy, 'stopOn'>;
  readonly loop: Pick<RunLoop, 'release' | 'enqueue' | 'advance'>;
  /** The session's kernel context: asks a tool's `reconcile` about a call a crash left in flight. */
  readonly kernel?: KernelContext;
  readonly failures: Pick<FailurePolicy, 'recover' | 'skip' | 'concludeAdjusted'>;
  /** Present when the policy has an adjust hook. */
  readonly adjust?: AdjustScope;
  /** The journal as folded at resume: the executions of steps a crash left in flight. */
  readonly resumed: FoldedRun | undefined;
}

/**
 * Puts a resumed session where the journal left it: ended steps keep their results, a stop the
 * previous session had begun carries on, steps whose adjust decision a crash cut off have it asked
 * (before anything else is released), failures no hook decided on go back to the failure policy,
 * and steps a crash left in flight are re-run, continued, finished from their journaled tool result,
 * reconciled by their tool, or failed as interrupted (E309). Resolves once every step is released
 * (the session has begun: a host's revision may apply).
 */
export function restoreSession(scope: RestoreScope, restored: ReadonlyMap<string, RestoredStep>): Promise<void> {
  const { board, control } = scope;
  const actions: [Slot, RestoredStep][] = [];
  for (const slot of board.slots) {
    const state = restored.get(slot.step.id);
    if (!state) continue;
    slot.attempt = state.attempt;
    slot.args = state.args;
    if (state.result) {
      slot.result = state.result;
      slot.status = state.result.status;
      board.done++;
      if (state.result.status === 'succeeded') board.outputs.set(slot.step.id, state.result.output);
    } else if (state.action) {
      // An undecided step is where its end left it: running, until the hooks decided.
      if (state.ended) slot.status = 'running';
      actions.push([slot, state]);
    }
  }
  board.retention.recount(board.graph, board.slots);
  for (const slot of board.slots) {
    if (!slot.result || !letsDependentsRun(slot.result)) continue;
    for (const dependent of board.graph.dependents[slot.index] ?? []) board.slot(dependent).remaining--;
  }
  carryOnStop(scope, restored);
  const undecided = actions.filter(([, state]) => state.ended !== undefined);
  if (control.stopped) {
    // The stop stands and nothing more is decided: an undecided step keeps its result, unasked.
    for (const [slot, state] of undecided) scope.loop.advance(slot, state.ended as StepResult);
    return Promise.resolve();
  }
  if (undecided.length === 0) {
    releaseRest(scope, actions);
    return Promise.resolve();
  }
  const released = adjustThenRelease(scope, undecided, actions);
  control.track(released);
  return released;
}

/**
 * Asks the adjust hook about every step a crash left unadjusted (plan order), and only then
 * advances them, so no dependent starts before every decision is journaled: a success advances the
 * loop, a failure meets the stop rule unless its revision applied, a failure no hook decided on
 * goes back to the failure policy. Then releases the rest of the session.
 */
async function adjustThenRelease(
  scope: RestoreScope,
  undecided: readonly [Slot, RestoredStep][],
  actions: readonly [Slot, RestoredStep][],
): Promise<void> {
  const { control, loop, failures } = scope;
  const outcomes = new Map<Slot, AdjustOutcome>();
  for (const [slot, state] of undecided) {
    if (state.action !== 'adjust' || control.stopped || !scope.adjust) continue;
    outcomes.set(slot, await adjustAfterStep(scope.adjust, slot, state.ended as StepResult));
  }
  for (const [slot, state] of undecided) {
    const result = state.ended as StepResult;
    if (state.action === 'recover') control.track(failures.recover(slot, result));
    else if (control.stopped || result.status === 'succeeded') loop.advance(slot, result);
    else failures.concludeAdjusted(slot, result, outcomes.get(slot) ?? 'continue');
  }
  if (!control.stopped) releaseRest(scope, actions);
}

/** Skips behind ended steps that block their dependents, carries on the steps a crash left in flight, releases the others. */
function releaseRest(scope: RestoreScope, actions: readonly [Slot, RestoredStep][]): void {
  const { board, control, journal, loop } = scope;
  for (const slot of board.slots) {
    if (slot.result && !letsDependentsRun(slot.result) && board.skipDependents(slot)) {
      control.track(journal.flush());
    }
  }
  for (const [slot, state] of actions) if (!slot.result) continueStep(scope, slot, state);
  for (const slot of board.slots) if (slot.status === 'pending') loop.release(slot);
}

/** A stop the previous session had begun (a cancel, a failure that stops the run, an abort) carries on. */
function carryOnStop(scope: RestoreScope, restored: ReadonlyMap<string, RestoredStep>): void {
  const { board, control, policy } = scope;
  for (const slot of board.slots) {
    const state = restored.get(slot.step.id);
    if (!slot.result || !state) continue;
    if (slot.result.status === 'waiting') {
      // A crash after a step began waiting: the run still waits for the answer.
      if (stopsRun(policy, slot, slot.result)) control.stop('waiting', `step "${slot.step.id}" waits for a person`);
    } else if (state.aborted || (slot.result.status !== 'cancelled' && stopsRun(policy, slot, slot.result))) {
      control.stop('failed', `step "${slot.step.id}" ${slot.result.status} before the resume`);
    } else if (state.adjustStopped) {
      // As the hook's stop did: a success ends the run cancelled, a failure failed.
      const kind = slot.result.status === 'succeeded' ? 'cancelled' : 'failed';
      control.stop(kind, `the adjust hook stopped the run after step "${slot.step.id}" before the resume`);
    } else if (slot.result.status === 'cancelled') {
      control.stop('cancelled', 'the run was being cancelled when it stopped');
    }
  }
}

function continueStep(scope: RestoreScope, slot: Slot, state: RestoredStep): void {
  const { loop, control, failures } = scope;
  switch (state.action) {
    case 'retry':
      // Steps inserted before this retry (a recovery `insert`) must succeed first.
      if (slot.remaining > 0) {
        slot.status = 'blocked';
        break;
      }
      loop.enqueue(slot, state.attempt + 1);
      break;
    case 'rerun':
      if (state.continueAttempt) {
        slot.resumeAttempt = true;
        loop.enqueue(slot, state.attempt);
      } else {
        loop.enqueue(slot, state.attempt + 1);
      }
      break;
    case 'reconcile':
      control.track(reconcileStep(scope, slot, state));
      break;
    case 'finish':
    case 'fail':
      control.track(endInterrupted(scope, slot, state));
      break;
    case 'skip':
      slot.status = 'recovering';
      control.track(failures.skip(slot, state.failure as StepResult, state.reason, state.by));
      break;
    default:
      break;
  }
}

/** Journals the end of a step a crash left in flight: its recorded tool result, or E309. */
async function endInterrupted(scope: RestoreScope, slot: Slot, state: RestoredStep): Promise<void> {
  const { journal } = scope;
  slot.status = 'running';
  const executionId = state.executionId ?? deriveExecutionId(journal.runId, slot.step.id, state.attempt);
  const execution = scope.resumed?.executions.get(executionId);
  const toolResult = state.action === 'finish' ? state.toolResult : undefined;
  const outcome =
    toolResult && (toolResult.status === 'succeeded' || toolResult.status === 'failed')
      ? {
          status: toolResult.status as 'succeeded' | 'failed',
          output: toolResult.output,
          ...(toolResult.error ? { error: toolResult.error } : {}),
          artifacts: execution?.artifacts ?? [],
        }
      : { status: 'failed' as const, error: interruptedError(slot.step.id), artifacts: [] };
  // The step's duration is its tool's, not the time since the crash.
  const started = performance.now() - (toolResult ? (execution?.durationMs ?? 0) : 0);
  const startedAt = state.startedAt ?? new Date().toISOString();
  const result = await endStep(slot.step, state.attempt, executionId, startedAt, started, outcome, {
    journal,
  });
  if (result.status === 'succeeded') await adjustThenAdvance(scope.adjust, scope.loop, slot, result);
  else await scope.failures.recover(slot, result);
}

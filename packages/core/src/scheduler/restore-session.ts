import type { StepResult } from '../journal/events.js';
import { endStep } from '../kernel/invoke-step.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import { interruptedError } from '../run/run-session.js';
import type { RestoredStep } from './resume-state.js';
import type { RunScheduler } from './run-scheduler.js';
import type { Slot } from './step-board.js';
import { letsDependentsRun } from './step-outcome.js';

/**
 * Puts a resumed session where the journal left it: ended steps keep their results, a stop the
 * previous session had begun carries on, and steps a crash left in flight are re-run, continued,
 * finished from their journaled tool result, or failed as interrupted (E309).
 */
export function restoreSession(scheduler: RunScheduler, restored: ReadonlyMap<string, RestoredStep>): void {
  const { board } = scheduler;
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
      actions.push([slot, state]);
    }
  }
  board.retention.recount(board.graph, board.slots);
  for (const slot of board.slots) {
    if (!slot.result || !letsDependentsRun(slot.result)) continue;
    for (const dependent of board.graph.dependents[slot.index] ?? []) board.slot(dependent).remaining--;
  }
  carryOnStop(scheduler, restored);
  if (scheduler.stopped) return;
  for (const slot of board.slots) {
    if (slot.result && !letsDependentsRun(slot.result) && board.skipDependents(slot)) {
      scheduler.track(board.journal.flush());
    }
  }
  for (const [slot, state] of actions) if (!slot.result) continueStep(scheduler, slot, state);
  for (const slot of board.slots) if (slot.status === 'pending') scheduler.release(slot);
}

/** A stop the previous session had begun (a cancel, a failure that stops the run, an abort) carries on. */
function carryOnStop(scheduler: RunScheduler, restored: ReadonlyMap<string, RestoredStep>): void {
  for (const slot of scheduler.board.slots) {
    const state = restored.get(slot.step.id);
    if (!slot.result || !state) continue;
    if (slot.result.status === 'waiting') {
      // A crash after a step began waiting: the run still waits for the answer.
      if (scheduler.stopsRun(slot, slot.result)) scheduler.stop('waiting', `step "${slot.step.id}" waits for a person`);
    } else if (state.aborted || (slot.result.status !== 'cancelled' && scheduler.stopsRun(slot, slot.result))) {
      scheduler.stop('failed', `step "${slot.step.id}" ${slot.result.status} before the resume`);
    } else if (slot.result.status === 'cancelled') {
      scheduler.stop('cancelled', 'the run was being cancelled when it stopped');
    }
  }
}

function continueStep(scheduler: RunScheduler, slot: Slot, state: RestoredStep): void {
  switch (state.action) {
    case 'retry':
      // Steps inserted before this retry (a recovery `insert`) must succeed first.
      if (slot.remaining > 0) {
        slot.status = 'blocked';
        break;
      }
      scheduler.enqueue(slot, state.attempt + 1);
      break;
    case 'rerun':
      if (state.continueAttempt) {
        slot.resumeAttempt = true;
        scheduler.enqueue(slot, state.attempt);
      } else {
        scheduler.enqueue(slot, state.attempt + 1);
      }
      break;
    case 'finish':
    case 'fail':
      scheduler.track(endInterrupted(scheduler, slot, state));
      break;
    case 'skip':
      slot.status = 'recovering';
      scheduler.track(scheduler.skipByDecision(slot, state.failure as StepResult, state.reason, state.by));
      break;
    default:
      break;
  }
}

/** Journals the end of a step a crash left in flight: its recorded tool result, or E309. */
async function endInterrupted(scheduler: RunScheduler, slot: Slot, state: RestoredStep): Promise<void> {
  slot.status = 'running';
  const executionId = state.executionId ?? deriveExecutionId(scheduler.runId, slot.step.id, state.attempt);
  const execution = scheduler.resumed?.executions.get(executionId);
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
    journal: scheduler.journal,
  });
  if (result.status === 'succeeded') scheduler.complete(slot, result);
  else await scheduler.recover(slot, result);
}

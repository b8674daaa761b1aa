import type { StepResult } from '../journal/events.js';
import { cancelledError } from '../kernel/tool-execution.js';
import type { Slot, StepBoard } from './step-board.js';
import { blocksDependents, dependencyError, describeOutcome } from './step-outcome.js';

/**
 * When a session stops, every step that never ended gets its `step-end`, in topological order:
 * `skipped` (E310) behind a dependency that blocks it, else `cancelled` with the stop's reason.
 * Returns whether anything was journaled (the caller flushes).
 */
export function endUnstarted(board: StepBoard, reason: string): boolean {
  let emitted = false;
  for (const index of board.graph.order) {
    const slot = board.slot(index);
    if (slot.result) continue;
    const blocker = (board.graph.dependencies[index] ?? [])
      .map((dependency) => board.slot(dependency))
      .find((dependency: Slot) => dependency.result && blocksDependents(dependency.result));
    slot.result = blocker
      ? board.emitEnd(
          slot,
          'skipped',
          dependencyError(
            slot.step.id,
            `dependency "${blocker.step.id}" ${describeOutcome(blocker.result as StepResult)}`,
            {
              dependency: blocker.step.id,
            },
          ),
        )
      : board.emitEnd(slot, 'cancelled', cancelledError(slot.step.id, reason));
    slot.status = slot.result.status;
    board.done++;
    emitted = true;
  }
  return emitted;
}

import type { ApprovalDecisionEvent, ModelCallEvent } from './events.js';

/**
 * What applying events changed in a folded run: the rows a store's projections must write again.
 * Pass one to `applyEvent` for each batch; the fold fills it as it goes, so a store writes each
 * changed step and execution once per batch, from the fold's own state, and never re-implements
 * what an event means. Run-level fields (plan, status, usage…) are few: compare them before and
 * after the batch.
 */
export class FoldChanges {
  /** Seq of the event being applied (set by `applyEvent`). */
  seq = 0;
  // Not readonly: `clear` gives a collection that holds something a new one (see there).
  /** Steps whose state changed, in the order they first changed. */
  steps = new Set<string>();
  /** Steps these events added to the run, each with the seq of the event that added it. */
  createdSteps = new Map<string, number>();
  /** Steps that left the run (a revision removed them before they started); a step may leave and come back. */
  removedSteps = new Set<string>();
  /** Executions whose state changed (their `tool-call` or `tool-result`). */
  executions = new Set<string>();
  /** Approval decisions journaled, in order. */
  readonly approvals: ApprovalDecisionEvent[] = [];
  /** Model calls journaled, in order. */
  readonly modelCalls: ModelCallEvent[] = [];

  /** The step changed; `created`: it was added to the run by the current event. */
  step(stepId: string, created = false): void {
    this.steps.add(stepId);
    if (created) this.createdSteps.set(stepId, this.seq);
  }

  /**
   * Forgets everything, for the next batch (a store may keep one instance). A collection that holds
   * something is replaced, not cleared: V8 gives a cleared Map or Set a new table in the generation
   * of the old one, and a long-lived instance's collections live in the old generation, where each
   * batch's table would stay as garbage until a full collection; a new one dies young. One that
   * holds nothing is kept (most batches create and remove no step).
   */
  clear(): void {
    this.seq = 0;
    if (this.steps.size > 0) this.steps = new Set();
    if (this.createdSteps.size > 0) this.createdSteps = new Map();
    if (this.removedSteps.size > 0) this.removedSteps = new Set();
    if (this.executions.size > 0) this.executions = new Set();
    this.approvals.length = 0;
    this.modelCalls.length = 0;
  }

  removeStep(stepId: string): void {
    this.steps.delete(stepId);
    this.createdSteps.delete(stepId);
    this.removedSteps.add(stepId);
  }
}

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
  /** Steps whose state changed, in the order they first changed. */
  readonly steps = new Set<string>();
  /** Steps these events added to the run, each with the seq of the event that added it. */
  readonly createdSteps = new Map<string, number>();
  /** Steps that left the run (a revision removed them before they started); a step may leave and come back. */
  readonly removedSteps = new Set<string>();
  /** Executions whose state changed (their `tool-call` or `tool-result`). */
  readonly executions = new Set<string>();
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
   * Forgets everything, for the next batch. A new instance per batch is cheaper for one that would
   * outlive many batches: V8 gives a cleared Set a new table in the old one's generation, and a
   * long-lived instance's is the old generation, where each batch's table stays until a full
   * collection.
   */
  clear(): void {
    this.seq = 0;
    // Only what holds something: V8's clear() allocates a new table even for an empty collection,
    // and most batches create and remove no step.
    if (this.steps.size > 0) this.steps.clear();
    if (this.createdSteps.size > 0) this.createdSteps.clear();
    if (this.removedSteps.size > 0) this.removedSteps.clear();
    if (this.executions.size > 0) this.executions.clear();
    this.approvals.length = 0;
    this.modelCalls.length = 0;
  }

  removeStep(stepId: string): void {
    this.steps.delete(stepId);
    this.createdSteps.delete(stepId);
    this.removedSteps.add(stepId);
  }
}

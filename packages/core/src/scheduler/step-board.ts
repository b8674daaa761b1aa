import type { StepError } from '../errors.js';
import type { StepResult } from '../journal/events.js';
import type { RunJournal } from '../journal/journal.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import type { Plan, Step } from '../plan/plan-schema.js';
import type { RetainOutputs } from '../run/engine-options.js';
import type { DependencyGraph } from './dependency-graph.js';
import type { SchedulerStepStatus } from './engine-policy.js';
import { OutputRetention } from './output-retention.js';
import { dependencyError, describeOutcome, letsDependentsRun } from './step-outcome.js';

/** One step's place in a session. */
export interface Slot {
  /** The step's plan index; a plan revision moves it. */
  index: number;
  /** The step as planned; only a revision that reopens a failed step (inserted steps before its retry) changes it. */
  step: Step;
  /** Dependencies that have not let this step run yet. */
  remaining: number;
  status: SchedulerStepStatus;
  /** The last attempt started (0: never). */
  attempt: number;
  /** Args a recovery hook substituted; `undefined` uses the step's own. */
  args: Record<string, unknown> | undefined;
  result: StepResult | undefined;
  recoveries: number;
  /** A crash left this goal-step attempt in flight: continue it rather than start a new one. */
  resumeAttempt: boolean;
  /** Taken from the ready queue to start: a plan revision may no longer change it. */
  claimed: boolean;
  /** A plan revision replaced or removed this step before it started: a queued entry for it is dropped. */
  removed: boolean;
  /** The journal's last seq when the step ended in this session (0: not yet, or before a resume): its end is in by then. */
  endSeq: number;
}

function newSlot(step: Step, index: number, remaining: number): Slot {
  return {
    index,
    step,
    remaining,
    status: 'pending',
    attempt: 0,
    args: undefined,
    result: undefined,
    recoveries: 0,
    resumeAttempt: false,
    claimed: false,
    removed: false,
    endSeq: 0,
  };
}

/** What a plan revision did to the board: fresh slots to release, and ended steps whose new dependents must be skipped. */
export interface BoardRevision {
  readonly release: readonly Slot[];
  readonly blockers: readonly Slot[];
}

/**
 * The graph's bookkeeping for one session: which steps ended, how many dependencies each still
 * waits for, the outputs references may read, and the `step-end`s of steps that never ran.
 */
export class StepBoard {
  slots: Slot[];
  readonly outputs = new Map<string, unknown>();
  readonly retention: OutputRetention;
  done = 0;
  running = 0;

  constructor(
    public plan: Plan,
    public graph: DependencyGraph,
    readonly journal: RunJournal,
    retainOutputs: RetainOutputs = 'all',
  ) {
    this.slots = plan.steps.map((step, index) => newSlot(step, index, graph.dependencies[index]?.length ?? 0));
    this.retention = new OutputRetention(this.outputs, retainOutputs);
    this.retention.recount(graph, this.slots);
  }

  /** Whether a revision must leave the step as it is: it started (in this session or before a resume) or ended. */
  static started(slot: Slot): boolean {
    return slot.claimed || slot.attempt > 0 || slot.result !== undefined;
  }

  /**
   * Moves the board to a revised plan: started steps keep their slots (a revision cannot change
   * them), every other step gets a fresh slot counting the dependencies it still waits for, and
   * the slots of replaced or removed steps are dropped. `reopened` is a started step whose
   * dependencies the revision changed (steps inserted before its retry): its count is redone too.
   */
  revise(plan: Plan, graph: DependencyGraph, reopened?: Slot): BoardRevision {
    const previous = new Map(this.slots.map((slot) => [slot.step.id, slot]));
    const counted: Slot[] = [];
    this.slots = plan.steps.map((step, index) => {
      const slot = previous.get(step.id);
      previous.delete(step.id);
      if (slot && (StepBoard.started(slot) || slot === reopened)) {
        slot.index = index;
        if (slot === reopened) {
          slot.step = step;
          counted.push(slot);
        }
        return slot;
      }
      if (slot) slot.removed = true;
      const fresh = newSlot(step, index, 0);
      counted.push(fresh);
      return fresh;
    });
    for (const slot of previous.values()) slot.removed = true;
    this.plan = plan;
    this.graph = graph;
    this.retention.recount(graph, this.slots);
    const release: Slot[] = [];
    const blockers = new Set<Slot>();
    for (const slot of counted) {
      slot.remaining = 0;
      for (const dependency of graph.dependencies[slot.index] ?? []) {
        const target = this.slot(dependency);
        if (!target.result) slot.remaining++;
        else if (!letsDependentsRun(target.result)) blockers.add(target);
      }
      if (slot !== reopened) release.push(slot);
    }
    return { release, blockers: [...blockers] };
  }

  slot(index: number): Slot {
    return this.slots[index] as Slot;
  }

  byId(stepId: string): Slot | undefined {
    const index = this.graph.indexById.get(stepId);
    return index === undefined ? undefined : this.slots[index];
  }

  /** The step ended with this final result; returns the dependents it made ready (`undefined` when it blocks them). */
  end(slot: Slot, result: StepResult): Slot[] | undefined {
    slot.result = result;
    slot.status = result.status;
    this.done++;
    if (result.status === 'succeeded') this.outputs.set(slot.step.id, result.output);
    this.retention.ended(this.graph, this.slots, slot);
    if (!letsDependentsRun(result)) return undefined;
    const ready: Slot[] = [];
    for (const dependent of this.graph.dependents[slot.index] ?? []) {
      const target = this.slot(dependent);
      target.remaining--;
      if (target.remaining === 0 && !target.result && target.status === 'blocked') ready.push(target);
    }
    return ready;
  }

  /** Skips every transitive dependent of `root` that has not ended (E310); the caller flushes. */
  skipDependents(root: Slot): boolean {
    const queue: Slot[] = [root];
    let emitted = false;
    for (let head = 0; head < queue.length; head++) {
      const cause = queue[head] as Slot;
      for (const dependent of this.graph.dependents[cause.index] ?? []) {
        const target = this.slot(dependent);
        if (target.result) continue;
        const error = dependencyError(
          target.step.id,
          `dependency "${cause.step.id}" ${describeOutcome(cause.result as StepResult)}`,
          { dependency: cause.step.id, root: root.step.id },
        );
        target.result = this.emitEnd(target, 'skipped', error);
        target.status = 'skipped';
        this.done++;
        this.retention.ended(this.graph, this.slots, target);
        emitted = true;
        queue.push(target);
      }
    }
    return emitted;
  }

  /** A referenced step that ended without output (validation guarantees references point at ancestors). */
  referencedWithoutOutput(references: readonly string[]): Slot | undefined {
    for (const stepId of references) {
      const target = this.byId(stepId);
      if (target?.result && target.result.status !== 'succeeded') return target;
    }
    return undefined;
  }

  /** Journals a `step-end` for a step that never ran its work in this attempt; returns the stored result. */
  emitEnd(slot: Slot, status: 'skipped' | 'cancelled', error: StepError): StepResult {
    const result: StepResult = {
      stepId: slot.step.id,
      tool: slot.step.tool,
      status,
      error,
      executionId: deriveExecutionId(this.journal.runId, slot.step.id, slot.attempt),
      attempt: slot.attempt,
      startedAt: new Date().toISOString(),
      durationMs: 0,
    };
    const event = this.journal.emit({ type: 'step-end', stepId: slot.step.id, result });
    return (event as { result: StepResult }).result;
  }
}

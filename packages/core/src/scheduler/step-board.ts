import type { StepError } from '../errors.js';
import type { StepResult } from '../events.js';
import type { RunJournal } from '../journal.js';
import { deriveExecutionId } from '../plan-digest.js';
import type { Plan, Step } from '../plan-schema.js';
import type { DependencyGraph } from './dependency-graph.js';
import type { SchedulerStepStatus } from './engine-policy.js';
import { dependencyError, describeOutcome, letsDependentsRun } from './step-outcome.js';

/** One step's place in a session. */
export interface Slot {
  readonly index: number;
  readonly step: Step;
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
}

/**
 * The graph's bookkeeping for one session: which steps ended, how many dependencies each still
 * waits for, the outputs references may read, and the `step-end`s of steps that never ran.
 */
export class StepBoard {
  readonly slots: Slot[];
  readonly outputs = new Map<string, unknown>();
  done = 0;
  running = 0;

  constructor(
    readonly plan: Plan,
    readonly graph: DependencyGraph,
    readonly journal: RunJournal,
  ) {
    this.slots = plan.steps.map((step, index) => ({
      index,
      step,
      remaining: graph.dependencies[index]?.length ?? 0,
      status: 'pending',
      attempt: 0,
      args: undefined,
      result: undefined,
      recoveries: 0,
      resumeAttempt: false,
    }));
  }

  slot(index: number): Slot {
    return this.slots[index] as Slot;
  }

  byId(stepId: string): Slot | undefined {
    const index = this.graph.indexById.get(stepId);
    return index === undefined ? undefined : this.slots[index];
  }

  /** Records a final result; returns the dependents it made ready (`undefined` when it blocks them). */
  settle(slot: Slot, result: StepResult): Slot[] | undefined {
    slot.result = result;
    slot.status = result.status;
    this.done++;
    if (result.status === 'succeeded') this.outputs.set(slot.step.id, result.output);
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

import type { AdjustDecisionEvent, RecoveryDecisionEvent, RunEvent, StepResult } from '../journal/events.js';
import type { FoldedRun, StepState } from '../journal/fold-run.js';
import { type InterruptedAction, interruptedAction } from '../run/run-session.js';

/** What the journal says about one step, turned into what the resumed session does with it. */
export interface RestoredStep {
  /** The last attempt started (0: never). */
  readonly attempt: number;
  /** Args the recovery hook substituted for later attempts. */
  readonly args: Record<string, unknown> | undefined;
  /** The step ended: its result stands (outputs of succeeded steps feed references again). */
  readonly result?: StepResult;
  /**
   * `rerun`: it was in flight and may run again; `finish`: its tool result is journaled, only the end is missing;
   * `fail`: in flight, not idempotent (E309); `reconcile`: in flight, not idempotent, its tool is asked; `retry`: it waited for a retry; `skip`: the hook chose skip;
   * `adjust`: it ended (`ended`), but a crash came before its adjust decision was journaled: the hook is asked now;
   * `recover`: it failed (`ended`), and a crash came before its retry, recovery or adjust decision was journaled:
   * the failure policy takes it from there (a retry while attempts are left, the recovery hook, then the adjust hook).
   */
  readonly action?: InterruptedAction | 'retry' | 'skip' | 'adjust' | 'recover';
  readonly executionId?: string;
  readonly startedAt?: string;
  readonly toolResult?: StepState['toolResult'];
  /** The recovery hook aborted the run at this step. */
  readonly aborted?: boolean;
  /** The adjust hook stopped the run after this step (its decision is journaled; the stop carries on). */
  readonly adjustStopped?: boolean;
  /** For `adjust` and `recover`: the step's journaled result, which the hooks are asked about. */
  readonly ended?: StepResult;
  /** A goal step's attempt continues (same attempt, its journaled turns replayed) instead of a new one. */
  readonly continueAttempt?: boolean;
  /** For `skip`: the failed result the hook (or a person continuing the run) decided on. */
  readonly failure?: StepResult;
  /** For `skip`: who chose it (default the recovery hook). */
  readonly by?: 'hook' | 'person';
  readonly reason?: string;
}

export interface ResumeState {
  readonly steps: ReadonlyMap<string, RestoredStep>;
  /** Steps that were in flight, as `run-resume` journals them. */
  readonly interrupted: { stepId: string; action: InterruptedAction }[];
}

export interface RestoreOptions {
  /** The host allows re-running an in-flight step whose tool is not idempotent. */
  readonly allowRerun: boolean;
  /** Whether the named tool has a `reconcile` (see `interruptedAction`). */
  readonly reconciles?: (tool: string) => boolean;
  /**
   * The resumed session asks an adjust hook, and the crashed session asked one (see `askedAdjustHook`):
   * a step whose adjust decision a crash cut off is asked again.
   */
  readonly adjusts?: boolean;
}

/** The journal's hook decisions, by step: the recovery hook's, and what the adjust hook decided in the last session. */
interface Decisions {
  readonly recovery: Map<string, RecoveryDecisionEvent>;
  readonly retryArgs: Map<string, Record<string, unknown>>;
  /** Steps whose last `step-end` has no `adjust-decision` after it (since the last `run-end`: an ended session asked all it had to). */
  readonly unadjusted: Set<string>;
  /** Adjust decisions that stopped the run (since the last `run-end`: continuing a stopped run does not stop it again). */
  readonly stops: Map<string, AdjustDecisionEvent>;
}

function decisionsOf(events: readonly RunEvent[]): Decisions {
  const decisions: Decisions = { recovery: new Map(), retryArgs: new Map(), unadjusted: new Set(), stops: new Map() };
  for (const event of events) {
    if (event.type === 'recovery-decision') {
      decisions.recovery.set(event.stepId, event);
      if (event.decision === 'retry' && event.args) decisions.retryArgs.set(event.stepId, event.args);
    } else if (event.type === 'step-end') {
      decisions.unadjusted.add(event.stepId);
    } else if (event.type === 'adjust-decision') {
      decisions.unadjusted.delete(event.stepId);
      if (event.decision === 'stop' && !event.error) decisions.stops.set(event.stepId, event);
    } else if (event.type === 'run-end') {
      decisions.unadjusted.clear();
      decisions.stops.clear();
    }
  }
  return decisions;
}

/**
 * Whether the session a crash cut off asked an adjust hook. `run-start` records it (`options.adjust`);
 * a journal without that key (written before it was recorded, or by an engine that journals other
 * options) shows a hook only by an `adjust-decision` since the session began: otherwise a resume
 * with a hook would ask about every step that ended before the crash, and apply revisions late.
 */
export function askedAdjustHook(options: Record<string, unknown> | undefined, events: readonly RunEvent[]): boolean {
  if (options?.adjust !== undefined) return options.adjust === true;
  for (let index = events.length - 1; index >= 0; index--) {
    const type = (events[index] as RunEvent).type;
    if (type === 'adjust-decision') return true;
    if (type === 'run-start' || type === 'run-resume' || type === 'run-continue') return false;
  }
  return false;
}

/**
 * Reads a folded run (and its hook decisions) into per-step instructions for the resumed session.
 */
export function restoreSteps(run: FoldedRun, events: readonly RunEvent[], options: RestoreOptions): ResumeState {
  const decisions = decisionsOf(events);
  const steps = new Map<string, RestoredStep>();
  const interrupted: ResumeState['interrupted'] = [];
  for (const step of run.plan?.steps ?? []) {
    const state = run.steps.get(step.id);
    const base = { attempt: state?.attempt ?? 0, args: decisions.retryArgs.get(step.id) };
    if (state?.status === 'pending' && state.continueAttempt) {
      // A goal step that waited for a person's answer goes on with the attempt it asked in.
      steps.set(step.id, { ...base, action: 'rerun', continueAttempt: true });
    } else if (!state || state.status === 'pending') {
      steps.set(step.id, base);
    } else if (state.status === 'running') {
      const restored = inFlight(step.tool, state, base, options);
      interrupted.push({ stepId: step.id, action: restored.action });
      steps.set(step.id, restored);
    } else if (state.status === 'retrying') {
      steps.set(step.id, { ...base, action: 'retry' });
    } else if (state.result && state.skipRequest) {
      steps.set(step.id, {
        ...base,
        action: 'skip',
        failure: state.result,
        by: 'person',
        ...(state.skipRequest.reason ? { reason: state.skipRequest.reason } : {}),
      });
    } else if (state.result) {
      steps.set(step.id, ended(step.id, state.result, base, decisions, options.adjusts ?? false));
    } else {
      steps.set(step.id, base);
    }
  }
  return { steps, interrupted };
}

type Base = Pick<RestoredStep, 'attempt' | 'args'>;

/** A step a crash left in flight. */
function inFlight(
  tool: string | undefined,
  state: StepState,
  base: Base,
  options: RestoreOptions,
): RestoredStep & { readonly action: InterruptedAction } {
  // A goal step continues its attempt after its last journaled turn: nothing that finished runs again.
  const goal = tool === undefined;
  // A tool that was aborted left a `cancelled` result, which is no result to finish with.
  const action = goal
    ? 'rerun'
    : interruptedAction(
        state.toolResult?.status === 'cancelled' ? { ...state, toolResult: undefined } : state,
        options.allowRerun,
        options.reconciles,
      );
  return {
    ...base,
    action,
    ...(goal ? { continueAttempt: true } : {}),
    ...(state.executionId ? { executionId: state.executionId } : {}),
    ...(state.startedAt ? { startedAt: state.startedAt } : {}),
    ...(state.toolResult ? { toolResult: state.toolResult } : {}),
  };
}

/**
 * A step with a journaled end: the recovery hook's retry or skip, a failure or an adjustment still to
 * decide, or a result that stands.
 */
function ended(stepId: string, result: StepResult, base: Base, decisions: Decisions, adjusts: boolean): RestoredStep {
  const decision = decisions.recovery.get(stepId);
  const decided = result.status === 'failed' && decision?.attempt === result.attempt;
  // An insert that was refused (error) left the default policy in charge: the result stands.
  const inserted = decided && decision.decision === 'insert' && !decision.error;
  const retried = decision?.decision === 'retry' || (inserted && decision?.afterwards !== 'skip');
  const skipped = decision?.decision === 'skip' || (inserted && decision?.afterwards === 'skip');
  if (decided && retried) return { ...base, action: 'retry' };
  if (decided && skipped) {
    return { ...base, action: 'skip', failure: result, ...(decision.reason ? { reason: decision.reason } : {}) };
  }
  const aborted = decided && decision.decision === 'abort';
  // The scheduler asks the adjust hook after a success and after a failure that stands (unless the
  // run was stopping, which the resume carries on): a crash may have come before the decision.
  const asked = result.status === 'succeeded' || result.status === 'failed';
  // `step-end` is durable before `step-retry` and the recovery hook: a failure of the session a crash
  // cut off that nothing decided on may still have attempts left, so it goes through the failure
  // policy from the start (its retry, its hook, then its conclusion), with or without an adjust hook.
  const undecided = result.status === 'failed' && !decided && decisions.unadjusted.has(stepId);
  if (adjusts && asked && !aborted && decisions.unadjusted.has(stepId)) {
    return { ...base, action: undecided ? 'recover' : 'adjust', ended: result };
  }
  if (undecided) return { ...base, action: 'recover', ended: result };
  const stop = decisions.stops.get(stepId);
  return {
    ...base,
    result,
    ...(aborted ? { aborted: true } : {}),
    ...(stop?.attempt === result.attempt ? { adjustStopped: true } : {}),
  };
}

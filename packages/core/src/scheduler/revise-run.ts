import { ErrorCodes, type StepError, StepwiseError, toStepError } from '../errors.js';
import { planReviseEvent } from '../journal/apply-plan-revise.js';
import type { PlanReviseEvent, RunEventInput } from '../journal/events.js';
import type { RunJournal } from '../journal/journal.js';
import { verifyAuthorization } from '../plan/plan-digest.js';
import { type PlanRevision, replaceRemainingSteps, revisePlan } from '../plan/plan-revision.js';
import type { ToolCatalog } from '../tools/tool-registry.js';
import { buildDependencyGraph } from './dependency-graph.js';
import type { EnginePolicy, RevisionRequest } from './engine-policy.js';
import type { RunLoop } from './run-loop.js';
import type { SessionControl } from './session-control.js';
import { type Slot, StepBoard } from './step-board.js';

/** A revision checked against the live run, not yet journaled. */
export interface PreparedRevision {
  readonly revision: PlanRevision;
  readonly request: RevisionRequest;
  /** A started step whose dependencies the revision may change (steps inserted before its retry). */
  readonly reopened: Slot | undefined;
}

function checkRequest(request: RevisionRequest): void {
  const bad = (message: string, location: string) =>
    new StepwiseError(ErrorCodes.INPUT_INVALID, `revision: ${message}`, { location });
  if (typeof request !== 'object' || request === null) throw bad('expected { edits } or { remaining }', '/');
  const { edits, remaining } = request;
  if ((edits === undefined) === (remaining === undefined)) throw bad('give either "edits" or "remaining"', '/');
  if (edits !== undefined && !Array.isArray(edits)) throw bad('"edits" must be an array', '/edits');
  if (remaining !== undefined && !Array.isArray(remaining)) throw bad('"remaining" must be an array', '/remaining');
  (edits ?? []).forEach((edit: unknown, index) => {
    if (typeof edit !== 'object' || edit === null) throw bad(`edit ${index} is not an object`, `/edits/${index}`);
  });
}

/** What revisions need: the session's board, journal and state, the policy's rules, and the loop. */
export interface RevisionParts {
  readonly board: StepBoard;
  readonly journal: RunJournal;
  readonly control: SessionControl;
  readonly policy: Pick<EnginePolicy, 'validation' | 'goalSteps' | 'revisionApproval'>;
  readonly tools: ToolCatalog;
  /** `release` queues the revision's fresh steps; `exclusive` keeps steps from starting while a revision is written. */
  readonly loop: Pick<RunLoop, 'release' | 'exclusive'>;
}

/** A hook's decision that asks for a revision, as it is journaled (without the refusal's error). */
export type RevisingDecision = Extract<RunEventInput, { type: 'adjust-decision' | 'recovery-decision' }>;

/**
 * The session's plan revisions: a revision is prepared (checked against the live run, nothing
 * written), committed (`plan-revise` journaled), and adopted (the board and the graph move to it).
 */
export class RunRevisions {
  readonly #parts: RevisionParts;
  /** Revisions of this session, oldest first; `#digest` is the latest's. */
  readonly #events: PlanReviseEvent[] = [];
  #digest: string | undefined;

  constructor(parts: RevisionParts) {
    this.#parts = parts;
  }

  /** The digest of this session's latest revision (`undefined`: none yet). */
  get digest(): string | undefined {
    return this.#digest;
  }

  /** The digest of the plan the run is on now: the latest revision's, else the one the run was journaled under. */
  get planDigest(): string | undefined {
    return this.#digest ?? this.#parts.journal.planDigest;
  }

  /** This session's `plan-revise` events, oldest first. */
  get events(): readonly PlanReviseEvent[] {
    return this.#events;
  }

  /**
   * A revision asked by the host (the run handle's `revise`). Waits until the session has begun,
   * so the steps a resume restored count as started; rejects (E004) once the run has ended.
   */
  async revise(request: RevisionRequest): Promise<PlanRevision> {
    const { control, journal, loop } = this.#parts;
    await control.begun;
    if (control.ended || control.stopped) {
      throw new StepwiseError(
        ErrorCodes.INPUT_INVALID,
        `run ${journal.runId} has ${control.ended ? 'ended' : 'stopped'}: only a running run can be revised`,
        { location: journal.runId },
      );
    }
    control.beginWork();
    try {
      return await loop.exclusive(async () => {
        if (control.stopped) {
          throw new StepwiseError(
            ErrorCodes.INPUT_INVALID,
            `run ${journal.runId} stopped before the revision applied`,
            { location: journal.runId },
          );
        }
        return this.commit(this.prepare(request));
      });
    } finally {
      control.endWork();
    }
  }

  /**
   * Builds the next revision of the run's current plan: started steps may not be touched (E005), the
   * result is validated under the engine's rules and tools (E001), and an authorization given with
   * it must be for the revised digest (E002 / E003). Pure: nothing is journaled or changed.
   */
  prepare(request: RevisionRequest, reopened?: Slot): PreparedRevision {
    checkRequest(request);
    const { board, policy, tools } = this.#parts;
    const started = board.slots
      .filter((slot) => slot !== reopened && StepBoard.started(slot))
      .map((slot) => slot.step.id);
    const planDigest = this.planDigest;
    const options = {
      started,
      tools,
      engine: policy.validation,
      goalSteps: policy.goalSteps !== undefined,
      ...(planDigest ? { parentDigest: planDigest } : {}),
    };
    const revision = request.remaining
      ? replaceRemainingSteps(board.plan, request.remaining, options)
      : revisePlan(board.plan, request.edits ?? [], options);
    if (request.authorization) verifyAuthorization(revision.plan, request.authorization);
    return { revision, request, reopened };
  }

  /**
   * A hook's decision that revises the plan (the adjust hook's `revise`, the recovery hook's
   * `insert`), in an exclusive section: the revision is prepared, the decision journaled (with
   * the error when the revision was refused), then the revision committed. The decision is
   * emitted, not flushed: it goes to the store in one append with the `plan-revise`, so a crash
   * cannot keep the decision and lose the revision it made. Returns whether the revision applied.
   */
  reviseByDecision(decision: RevisingDecision, request: RevisionRequest, reopened?: Slot): Promise<boolean> {
    const { journal, loop } = this.#parts;
    return loop.exclusive(async () => {
      let prepared: PreparedRevision | undefined;
      let error: StepError | undefined;
      try {
        prepared = this.prepare(request, reopened);
      } catch (thrown) {
        error = toStepError(thrown);
      }
      journal.emit(error ? { ...decision, error } : decision);
      if (!prepared) {
        await journal.flush();
        return false;
      }
      await this.commit(prepared);
      return true;
    });
  }

  /**
   * Journals `plan-revise` (durable before anything runs on the new plan), adopts it, and applies
   * the policy's approval rule: without an approval of the new digest a strict run holds (ends
   * `waiting`) or fails.
   */
  async commit(prepared: PreparedRevision): Promise<PlanRevision> {
    const { journal, control, policy } = this.#parts;
    const { revision, request, reopened } = prepared;
    const event = planReviseEvent(revision, request.by ?? 'host', request.reason);
    const recorded = await journal.record(
      request.authorization ? { ...event, authorization: request.authorization } : event,
    );
    this.#adopt(revision, recorded as PlanReviseEvent, reopened);
    const rule = policy.revisionApproval;
    if (rule && !request.authorization) {
      const reason = `revision ${revision.revision} of the plan (digest ${revision.digest.slice(0, 12)}…) is not approved`;
      if (rule === 'wait') control.hold(reason);
      else control.stop('failed', reason);
    }
    return revision;
  }

  /** Moves the session to a journaled revision: new board and graph; fresh steps released, or skipped behind a blocker. */
  #adopt(revision: PlanRevision, event: PlanReviseEvent, reopened: Slot | undefined): void {
    const { board, journal, control, loop } = this.#parts;
    const { release, blockers } = board.revise(revision.plan, buildDependencyGraph(revision.plan), reopened);
    this.#digest = revision.digest;
    this.#events.push(event);
    for (const blocker of blockers) if (board.skipDependents(blocker)) control.track(journal.flush());
    for (const slot of release) loop.release(slot);
  }
}

import { randomUUID } from 'node:crypto';
import { ErrorCodes, StepwiseError } from '../errors.js';
import type { ApprovalResponseEvent } from '../journal/events.js';
import { foldRun } from '../journal/fold-run.js';
import { RunJournal } from '../journal/journal.js';
import type { JournalKey } from '../journal/journal-chain.js';
import { leaseDeadline } from '../journal/lease-keeper.js';
import { readVerifiedJournal } from '../journal/read-verified-journal.js';
import { type RunStore, readAll } from '../journal/run-store.js';
import { checkLinkable } from '../journal/verify-journal.js';
import { approvalState, type PendingApproval } from './pending-approvals.js';

/**
 * A person's answer to what a waiting run waits on. Name the request by `stepId` or `requestId`;
 * give a `decision` for an approval request, an `answer` for a goal step's question.
 */
export interface ApprovalAnswer {
  readonly stepId?: string;
  readonly requestId?: string;
  /** For an approval. `edit`: approve and run the step with `args` instead (validated when the step runs). */
  readonly decision?: 'approve' | 'deny' | 'skip' | 'edit';
  readonly args?: Record<string, unknown>;
  /** For a question: the reply the model reads as its next message when the run resumes. */
  readonly answer?: string;
  /** Who answered; journaled. */
  readonly by: string;
  readonly reason?: string;
}

function refused(runId: string, reason: string, message: string, location: string): StepwiseError {
  return new StepwiseError(ErrorCodes.ANSWER_REFUSED, `answer refused for run ${runId}: ${message}`, {
    location,
    details: { reason },
  });
}

/** The approval requests a run waits on: those of its steps that ended `waiting` (none unless the run is `waiting`). */
export async function pendingApprovals(store: RunStore, runId: string): Promise<PendingApproval[]> {
  const events = await readAll(store, runId);
  const run = foldRun(events, runId);
  if (run.status !== 'waiting') return [];
  return [...approvalState(events).pending.values()].filter(
    (request) => run.steps.get(request.stepId)?.status === 'waiting',
  );
}

export interface RespondOptions {
  /** The key the run's hash chain is keyed with (the engine's `journalKey`): the journal is checked with it (E507) and the answer linked with it. */
  readonly journalKey?: JournalKey;
}

/**
 * Journals a person's answer to a waiting run's approval request, from any process with the store.
 * The answer is written under the run's lease: while another process holds the run (running it,
 * or answering at the same moment) it is refused with E501; an answer to a run that is not
 * waiting, to an unknown or stale request, or to a request already answered is refused with E411
 * (`details.reason`: `not-waiting | unknown | stale | answered`); a journal that does not match its
 * hash chain with E507. Then `resume(runId)` continues.
 */
export async function respond(
  store: RunStore,
  runId: string,
  answer: ApprovalAnswer,
  options: RespondOptions = {},
): Promise<ApprovalResponseEvent> {
  checkAnswer(runId, answer);
  const sentAt = Date.now();
  const lease = await store.acquireLease(runId, `respond:${process.pid}:${randomUUID()}`, 30_000);
  if (!lease) {
    throw new StepwiseError(ErrorCodes.LEASE_CONFLICT, `run ${runId} is held by another process; answer again`, {
      location: runId,
    });
  }
  let journal: RunJournal | undefined;
  try {
    const { events, verification } = await readVerifiedJournal(store, runId, options);
    checkLinkable(verification);
    const run = foldRun(events, runId);
    if (!run.plan)
      throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} has no journal`, { location: runId });
    const request = findRequest(runId, run.status, approvalState(events), answer);
    journal = new RunJournal({
      runId,
      store,
      lease,
      leaseDeadline: leaseDeadline(lease, sentAt),
      lastSeq: run.lastSeq,
      planDigest: run.planDigest,
      lastChain: verification.lastChain,
      ...(options.journalKey === undefined ? {} : { journalKey: options.journalKey }),
    });
    const event = await journal.record({
      type: 'approval-response',
      stepId: request.stepId,
      requestId: request.requestId,
      decision: answer.answer === undefined ? (answer.decision as NonNullable<ApprovalAnswer['decision']>) : 'answer',
      ...(answer.decision === 'edit' && answer.args ? { args: answer.args } : {}),
      ...(answer.answer === undefined ? {} : { answer: answer.answer }),
      by: answer.by,
      ...(answer.reason === undefined ? {} : { reason: answer.reason }),
    });
    return event as ApprovalResponseEvent;
  } finally {
    if (journal) await journal.close();
    else await store.releaseLease(lease).catch(() => undefined);
  }
}

function checkAnswer(runId: string, answer: ApprovalAnswer): void {
  const invalid = (message: string, location: string) =>
    new StepwiseError(ErrorCodes.INPUT_INVALID, `answer for run ${runId}: ${message}`, { location });
  if (answer.answer !== undefined) {
    if (answer.decision !== undefined)
      throw invalid('give a decision (approval) or an answer (question), not both', 'answer');
    if (typeof answer.answer !== 'string' || answer.answer.trim() === '') {
      throw invalid('answer must be a non-empty string', 'answer');
    }
  } else if (!['approve', 'deny', 'skip', 'edit'].includes(answer.decision as string)) {
    throw invalid(`decision must be approve, deny, skip or edit (got ${String(answer.decision)})`, 'decision');
  }
  if ((answer.stepId === undefined) === (answer.requestId === undefined)) {
    throw invalid('name the request by stepId or by requestId (one of them)', 'stepId');
  }
  if (typeof answer.by !== 'string' || answer.by.length === 0) throw invalid('say who answers (by)', 'by');
  const args = answer.args;
  if (answer.decision === 'edit' && (typeof args !== 'object' || args === null || Array.isArray(args))) {
    throw invalid('edit needs args (an object)', 'args');
  }
}

function findRequest(
  runId: string,
  status: string,
  state: ReturnType<typeof approvalState>,
  answer: ApprovalAnswer,
): PendingApproval {
  const named = answer.requestId ?? answer.stepId ?? '';
  const stepId = answer.stepId ?? state.requests.get(answer.requestId ?? '');
  if (stepId === undefined) throw refused(runId, 'unknown', `no approval request ${named}`, named);
  if (state.answers.has(stepId) || state.questionAnswers.has(stepId)) {
    throw refused(runId, 'answered', `the request of step "${stepId}" was already answered`, named);
  }
  if (status !== 'waiting') throw refused(runId, 'not-waiting', `the run is ${status}, not waiting`, runId);
  const request = state.pending.get(stepId);
  if (!request) throw refused(runId, 'unknown', `step "${stepId}" has no approval request waiting`, named);
  if (answer.requestId !== undefined && answer.requestId !== request.requestId) {
    throw refused(runId, 'stale', `request ${answer.requestId} was replaced by ${request.requestId}`, named);
  }
  if ((request.kind === 'question') !== (answer.answer !== undefined)) {
    const needs = request.kind === 'question' ? 'a question: reply with answer' : 'an approval: reply with decision';
    throw new StepwiseError(
      ErrorCodes.INPUT_INVALID,
      `answer for run ${runId}: step "${request.stepId}" asks ${needs}`,
      {
        location: request.kind === 'question' ? 'answer' : 'decision',
      },
    );
  }
  return request;
}

import {
  approvePlan,
  ErrorCodes,
  type JournalKey,
  type ResumeOptions,
  type RunHandle,
  type RunStore,
  readVerifiedJournal,
  respond,
  StepwiseError,
} from '@stepwise/core';
import { sleep } from '@stepwise/core/engine';
import { cancelRun, foldRun } from '@stepwise/core/store';
import type { DashboardAction } from '../dashboard-options.js';
import type { RunRegistry } from './run-registry.js';
import { waitingRequests } from './waiting-on.js';

/** An action as posted by the page (JSON), checked: the action `authorize` sees, and its free text. */
export interface ParsedAction {
  readonly action: Exclude<DashboardAction, { kind: 'view' }>;
  /** A question's answer. */
  readonly answer?: string;
  readonly reason?: string;
}

function invalid(message: string, location: string): StepwiseError {
  return new StepwiseError(ErrorCodes.INPUT_INVALID, message, { location });
}

function optionalText(body: Record<string, unknown>, name: string, limit: number): string | undefined {
  const value = body[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw invalid(`${name} must be a string`, name);
  if (value.length > limit) throw invalid(`${name} is longer than ${limit} characters`, name);
  return value;
}

function stepList(body: Record<string, unknown>, name: string): string[] {
  const value = body[name] ?? [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || item === '')) {
    throw invalid(`${name} must be a list of step ids`, name);
  }
  return value as string[];
}

/** Checks a posted action (E004 naming the field); the run is the one of the URL. */
export function parseAction(runId: string, body: unknown): ParsedAction {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalid('the action must be a JSON object', '/');
  const fields = body as Record<string, unknown>;
  const reason = optionalText(fields, 'reason', 2000);
  const extra = reason === undefined ? {} : { reason };
  switch (fields.kind) {
    case 'respond': {
      const requestId = optionalText(fields, 'requestId', 500);
      if (requestId === undefined) throw invalid('respond needs the requestId it answers', 'requestId');
      const answer = optionalText(fields, 'answer', 20_000);
      const decision = answer === undefined ? fields.decision : 'answer';
      if (decision !== 'approve' && decision !== 'deny' && decision !== 'answer') {
        throw invalid('respond needs decision "approve" or "deny", or an answer', 'decision');
      }
      return {
        action: { kind: 'respond', runId, requestId, decision },
        ...(answer === undefined ? {} : { answer }),
        ...extra,
      };
    }
    case 'cancel':
      return { action: { kind: 'cancel', runId }, ...extra };
    case 'approve-plan': {
      // The digest of the plan the person saw: a plan revised since is not what they approve.
      const planDigest = optionalText(fields, 'planDigest', 200);
      if (planDigest === undefined) throw invalid('approve-plan needs the planDigest of the plan shown', 'planDigest');
      return { action: { kind: 'approve-plan', runId, planDigest }, ...extra };
    }
    case 'continue':
      return {
        action: { kind: 'continue', runId, retry: stepList(fields, 'retry'), skip: stepList(fields, 'skip') },
        ...extra,
      };
    default:
      throw invalid('kind must be respond, cancel, continue or approve-plan', 'kind');
  }
}

/** What an action needs: the store, the host's way to continue runs, and the runs of this process. */
export interface ActionContext {
  readonly store: RunStore;
  readonly resume: ((runId: string, options: ResumeOptions) => RunHandle | Promise<RunHandle>) | undefined;
  readonly registry: RunRegistry;
  /** Checks the run's journal (E507) and links answers into its chain. */
  readonly journalKey: JournalKey | undefined;
}

/** The run's journal, checked against its hash chain before an action reads it. */
async function checkedEvents(context: ActionContext, runId: string) {
  return (await readVerifiedJournal(context.store, runId, { journalKey: context.journalKey })).events;
}

function cannotContinue(runId: string): StepwiseError {
  return new StepwiseError(
    ErrorCodes.CONFIG_INVALID,
    `this dashboard cannot continue runs (it was given no resume): continue ${runId} with stepwise resume`,
    { location: '/resume' },
  );
}

/**
 * Continues a run in this process and waits until it has journaled that it goes on (or has ended),
 * so a refusal (E501: another process holds it; E004: an unknown step to retry) reaches the person.
 */
async function startResume(context: ActionContext, runId: string, options: ResumeOptions): Promise<void> {
  if (!context.resume) throw cannotContinue(runId);
  const before = (await context.store.getRun(runId))?.lastSeq ?? 0;
  const handle = context.registry.track(await context.resume(runId, options));
  let settled = false;
  const result = handle.result.then(
    () => {
      settled = true;
    },
    (error: unknown) => {
      settled = true;
      throw error;
    },
  );
  const started = (async () => {
    for (let waited = 0; waited < 15_000 && !settled; waited += 25) {
      if (((await context.store.getRun(runId))?.lastSeq ?? 0) > before) return;
      await sleep(25);
    }
  })();
  await Promise.race([result, started]);
}

/** Does what a person asked through core's functions, as the CLI would; answers what happened in one sentence. */
export async function performAction(context: ActionContext, parsed: ParsedAction, by: string): Promise<string> {
  const { action } = parsed;
  const { runId } = action;
  switch (action.kind) {
    case 'respond': {
      await respond(
        context.store,
        runId,
        {
          requestId: action.requestId,
          ...(parsed.answer === undefined
            ? { decision: action.decision as 'approve' | 'deny' }
            : { answer: parsed.answer }),
          by,
          ...(parsed.reason === undefined ? {} : { reason: parsed.reason }),
        },
        context.journalKey === undefined ? {} : { journalKey: context.journalKey },
      );
      const what = action.decision === 'answer' ? 'answer' : action.decision;
      const events = await checkedEvents(context, runId);
      const left = waitingRequests(events, foldRun(events, runId)).length;
      if (left > 0) return `${what} journaled; the run still waits on ${left} more`;
      if (!context.resume) return `${what} journaled; continue the run with stepwise resume ${runId}`;
      await startResume(context, runId, {});
      return `${what} journaled; the run goes on`;
    }
    case 'cancel': {
      // Through the store, as `stepwise cancel`: a run of another process (or a worker) is cancelled by
      // that process at its next lease renewal, one nobody holds (waiting, crashed) is ended here.
      const reason = `from the dashboard${parsed.reason ? `: ${parsed.reason}` : ''}`;
      const outcome = await cancelRun(context.store, runId, {
        by,
        reason,
        ...(context.journalKey === undefined ? {} : { journalKey: context.journalKey }),
      });
      if (outcome.outcome === 'cancelled') return 'the run was cancelled';
      const handle = context.registry.get(runId);
      if (!handle) return 'cancel requested; the process running the run cancels it at its next lease renewal';
      // A run of this process need not wait for its renewal.
      handle.cancel(`${by} asked to cancel the run: ${reason}`);
      // A tool that ignores its signal keeps the run going a while: answer anyway.
      await Promise.race([handle.result.catch(() => undefined), sleep(5_000)]);
      return 'the run was cancelled';
    }
    case 'continue': {
      const extra = parsed.reason === undefined ? {} : { reason: parsed.reason };
      await startResume(context, runId, { retry: action.retry, skip: action.skip, by, ...extra });
      return 'the run goes on';
    }
    case 'approve-plan': {
      if (!context.resume) throw cannotContinue(runId);
      // The plan a person approves must be the one journaled: a changed journal is refused (E507).
      const run = foldRun(await checkedEvents(context, runId), runId);
      const plan = run.plan;
      if (!plan)
        throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} is not in the store`, { location: runId });
      if (run.planDigest !== action.planDigest) {
        throw new StepwiseError(
          ErrorCodes.PLAN_MISMATCH,
          `the plan of run ${runId} changed since the page showed it (digest ${run.planDigest.slice(0, 12)}…): look again`,
          { location: 'planDigest' },
        );
      }
      await startResume(context, runId, { authorization: approvePlan(plan, { by }) });
      return `plan ${plan.id} approved by ${by}; the run goes on`;
    }
  }
}

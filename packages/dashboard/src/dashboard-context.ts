import { ErrorCodes, type RunEvent, readVerifiedJournal, StepwiseError } from '@stepwise/core';
import type { DashboardAction, ResolvedOptions } from './dashboard-options.js';
import { RequestGuard } from './http/request-guard.js';
import { refused } from './http/responses.js';
import { RunRegistry } from './runs/run-registry.js';
import { buildRunView, type RunView } from './runs/run-view.js';

/** Events of a run as `readVerifiedJournal` read them, and how far they verified. */
export type JournalRead = Awaited<ReturnType<typeof readVerifiedJournal>>;

/** Everything a route needs: the options, the guard, the runs of this process, and how to stop. */
export class DashboardContext {
  readonly options: ResolvedOptions;
  readonly guard: RequestGuard;
  readonly registry = new RunRegistry();
  /** Aborts when the dashboard closes: every live stream ends. */
  readonly closing = new AbortController();

  constructor(options: ResolvedOptions) {
    this.options = options;
    this.guard = new RequestGuard(options);
  }

  /** Refuses (E002) what `authorize` does not allow. */
  async authorize(request: Request, action: DashboardAction): Promise<void> {
    const decide = this.options.authorize;
    if (decide && (await decide(request, action)) !== true) {
      throw refused(`not allowed: ${action.kind}${'runId' in action && action.runId ? ` on run ${action.runId}` : ''}`);
    }
  }

  /** Who is behind a request, for the journal. */
  async actor(request: Request): Promise<string> {
    const who = this.options.actor ? await this.options.actor(request) : undefined;
    return typeof who === 'string' && who.trim() !== '' ? who.trim() : 'dashboard';
  }

  /**
   * A run's journal checked against its hash chain (E507 when it was changed outside Stepwise);
   * E505 when the store has no such run. With `after` (an earlier read's verification), only what
   * was journaled since.
   */
  async read(runId: string, after?: JournalRead['verification']): Promise<JournalRead> {
    const read = await readVerifiedJournal(this.options.store, runId, {
      ...(this.options.journalKey === undefined ? {} : { journalKey: this.options.journalKey }),
      ...(after ? { after } : {}),
    });
    if (!after && read.events.length === 0) {
      throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} is not in the store`, { location: runId });
    }
    return read;
  }

  /** A run's whole journal, checked (see `read`). */
  async journal(runId: string): Promise<RunEvent[]> {
    return (await this.read(runId)).events;
  }

  view(events: readonly RunEvent[]): RunView {
    return buildRunView(events, {
      readOnly: this.options.readOnly,
      canContinue: this.options.resume !== undefined,
    });
  }

  /** Untyped failures are logged here and answered as a bare 500. */
  report(error: unknown): void {
    if (!StepwiseError.isInstance(error)) console.error('@stepwise/dashboard:', error);
  }
}

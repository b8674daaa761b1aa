import type { PendingApproval, RunEvent } from '@stepwise/core';
import { foldRun } from '@stepwise/core/store';
import { type ReportData, type ReportParts, reportData, reportParts } from '../report/render-report.js';
import { buildReportModel } from '../report/report-model.js';
import { focusModel } from './focus-model.js';
import { needsPlanApproval, waitingRequests } from './waiting-on.js';

/** What a person may do to a run from its page right now. */
export interface RunActions {
  /** The dashboard refuses every action: the page shows none. */
  readonly readOnly: boolean;
  /** Approval requests and questions the run waits on. */
  readonly pending: readonly PendingApproval[];
  /** A strict run waits for an approval of its revised plan. */
  readonly planApproval: boolean;
  /** The run is running or waiting: it can be cancelled from here, whichever process runs it. */
  readonly cancellable: boolean;
  /** The dashboard can continue runs (the host gave it `resume`). */
  readonly canContinue: boolean;
  /** Steps of an ended run that may run again (`retry`). */
  readonly retryable: readonly string[];
  /** Steps of an ended run that may end skipped so their dependents run (`skip`). */
  readonly skippable: readonly string[];
  /** The run continues as it is (a cancelled run, or a waiting one whose questions are all answered). */
  readonly resumable: boolean;
}

/** A run's page as data: the report's pieces, the data its script reads, and the actions. */
export interface RunView {
  readonly runId: string;
  /** The last journal event it was built from. */
  readonly seq: number;
  readonly status: string;
  readonly title: string;
  readonly parts: Omit<ReportParts, 'title'>;
  readonly data: ReportData;
  readonly actions: RunActions;
}

const ENDED_TO_CONTINUE = new Set(['failed', 'partial', 'cancelled']);

export function runActions(
  events: readonly RunEvent[],
  options: { readonly readOnly: boolean; readonly canContinue: boolean },
): RunActions {
  const run = foldRun(events);
  const pending = waitingRequests(events, run);
  const planApproval = needsPlanApproval(run);
  const ended = ENDED_TO_CONTINUE.has(run.status);
  const steps = [...run.steps.values()];
  const withStatus = (statuses: readonly string[]) =>
    ended ? steps.filter((step) => statuses.includes(step.status)).map((step) => step.stepId) : [];
  return {
    readOnly: options.readOnly,
    pending,
    planApproval,
    // Any running or waiting run, whichever process runs it: the cancel goes through the store (`cancelRun`).
    cancellable: run.status === 'running' || run.status === 'waiting',
    canContinue: options.canContinue,
    retryable: withStatus(['failed', 'denied', 'cancelled', 'skipped']),
    skippable: withStatus(['failed', 'denied', 'cancelled']),
    resumable: run.status === 'cancelled' || (run.status === 'waiting' && pending.length === 0 && !planApproval),
  };
}

/** Builds a run's page from its journal (in seq order) with the report's model and renderer. */
export function buildRunView(
  events: readonly RunEvent[],
  options: { readonly readOnly: boolean; readonly canContinue: boolean },
): RunView {
  const { model, hidden } = focusModel(buildReportModel(events));
  const { title, ...parts } = reportParts(model);
  if (hidden > 0) {
    parts.header += `<p class="note" id="steps-shown">This page shows ${model.steps.length} of ${model.steps.length + hidden} steps: those running, waiting or failed, then the latest to finish, then the next to start. The run's figures are the whole run's; <code>stepwise report</code> draws every step.</p>`;
  }
  return {
    runId: model.run.runId,
    seq: events.length > 0 ? (events[events.length - 1] as RunEvent).seq : 0,
    status: model.run.status,
    title,
    parts,
    data: reportData(model),
    actions: runActions(events, options),
  };
}

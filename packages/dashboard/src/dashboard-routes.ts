import { ErrorCodes, type RunEvent, StepwiseError } from '@stepwise/core';
import { DASHBOARD_STYLE } from './client/dashboard-style.js';
import { RUN_SCRIPT } from './client/run-script.js';
import { RUNS_SCRIPT } from './client/runs-script.js';
import type { DashboardContext } from './dashboard-context.js';
import { eventStreamResponse, type StreamMessage } from './http/event-stream.js';
import { newNonce } from './http/request-guard.js';
import { assetResponse, htmlResponse, jsonResponse, notFound, refused } from './http/responses.js';
import { type AssetName, renderRunPage, renderRunsPage } from './pages/dashboard-pages.js';
import { REPORT_SCRIPT } from './report/report-script.js';
import { REPORT_STYLE } from './report/report-style.js';
import { parseAction, performAction } from './runs/run-actions.js';
import { listRunsPage, parseRunsQuery } from './runs/runs-list.js';
import { StoreLiveOutput } from './runs/store-live-output.js';

const ASSETS: Record<AssetName, [string, string]> = {
  'report.css': [REPORT_STYLE, 'text/css; charset=utf-8'],
  'dashboard.css': [DASHBOARD_STYLE, 'text/css; charset=utf-8'],
  'report.js': [REPORT_SCRIPT, 'text/javascript; charset=utf-8'],
  'runs.js': [RUNS_SCRIPT, 'text/javascript; charset=utf-8'],
  'run.js': [RUN_SCRIPT, 'text/javascript; charset=utf-8'],
};

export function asset(name: string): Response {
  const found = Object.hasOwn(ASSETS, name) ? ASSETS[name as AssetName] : undefined;
  return found ? assetResponse(found[0], found[1]) : notFound();
}

function pageContext(context: DashboardContext, request: Request) {
  const grant = context.guard.grant(request);
  const nonce = newNonce();
  const page = { basePath: context.options.basePath, nonce, token: grant.token, readOnly: context.options.readOnly };
  return { page, nonce, setCookie: grant.setCookie };
}

function runsOptions(context: DashboardContext) {
  return { pageSize: context.options.pageSize };
}

export async function runsPage(context: DashboardContext, request: Request, url: URL): Promise<Response> {
  await context.authorize(request, { kind: 'view' });
  const runs = await listRunsPage(context.options.store, parseRunsQuery(url.searchParams), runsOptions(context));
  const { page, nonce, setCookie } = pageContext(context, request);
  return htmlResponse(renderRunsPage(runs, page), nonce, setCookie);
}

export async function runsJson(context: DashboardContext, request: Request, url: URL): Promise<Response> {
  await context.authorize(request, { kind: 'view' });
  return jsonResponse(
    await listRunsPage(context.options.store, parseRunsQuery(url.searchParams), runsOptions(context)),
  );
}

/** The runs list, sent again whenever it changes (a run started, moved on or ended, in any process). */
export async function runsStream(context: DashboardContext, request: Request, url: URL): Promise<Response> {
  await context.authorize(request, { kind: 'view' });
  const query = parseRunsQuery(url.searchParams);
  let last = '';
  return eventStreamResponse({
    // A search reads many runs: it looks again less often.
    intervalMs: context.options.pollIntervalMs * (query.search ? 4 : 1),
    signal: request.signal,
    stopped: context.closing.signal,
    onError: (error) => context.report(error),
    async follow(): Promise<StreamMessage[]> {
      const page = await listRunsPage(context.options.store, query, runsOptions(context));
      const text = JSON.stringify(page);
      if (text === last) return [];
      last = text;
      return [{ event: 'runs', data: page }];
    },
  });
}

export async function runPage(context: DashboardContext, request: Request, runId: string): Promise<Response> {
  await context.authorize(request, { kind: 'view', runId });
  const view = context.view(await context.journal(runId));
  const { page, nonce, setCookie } = pageContext(context, request);
  return htmlResponse(renderRunPage(view, page), nonce, setCookie);
}

export async function runJson(context: DashboardContext, request: Request, runId: string): Promise<Response> {
  await context.authorize(request, { kind: 'view', runId });
  return jsonResponse(context.view(await context.journal(runId)));
}

function afterSeqOf(request: Request, url: URL): number {
  const text = request.headers.get('last-event-id') ?? url.searchParams.get('after') ?? '0';
  const seq = Number(text);
  if (!/^\d{1,12}$/.test(text) || !Number.isSafeInteger(seq)) {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `after must be a journal seq (got "${text}")`, {
      location: 'after',
    });
  }
  return seq;
}

/**
 * A run's live stream: every journal event after `after` (or the browser's Last-Event-ID) as a
 * `journal` message, then the page drawn again as a `view` message, each time the store has more;
 * and its live output (`output` messages: a running command's stdout and stderr, a model's answer
 * as it streams), the output so far first: from this process for a run going on here, else from
 * the store, where the process running it publishes its commands' output (`readLiveOutput`).
 */
export async function runEvents(
  context: DashboardContext,
  request: Request,
  url: URL,
  runId: string,
): Promise<Response> {
  await context.authorize(request, { kind: 'view', runId });
  let sent = afterSeqOf(request, url);
  let read = await context.read(runId);
  const events: RunEvent[] = read.events;
  let first = true;
  let liveSent = 0;
  const published = new StoreLiveOutput();
  // The page is drawn again after new events, but a run whose page is slow to draw (many thousand
  // steps) is drawn less often: after a drawing that took T ms, none before 4T ms have passed, so
  // a watched run never takes more than a fifth of the server's time. Journal events still flow.
  let viewDue = false;
  let nextViewAt = 0;
  return eventStreamResponse({
    intervalMs: context.options.pollIntervalMs,
    signal: request.signal,
    stopped: context.closing.signal,
    onError: (error) => context.report(error),
    async follow(): Promise<StreamMessage[]> {
      // Each new page is checked where the last one ended: a run changed while it is watched is refused too.
      if (!first) read = await context.read(runId, read.verification);
      const batch = first ? events : read.events;
      if (!first) events.push(...batch);
      first = false;
      const fresh = batch.filter((event) => event.seq > sent);
      const live = context.registry.live.since(runId, liveSent);
      liveSent = live.last;
      const messages: StreamMessage[] = fresh.map((event) => ({ event: 'journal', data: event, id: event.seq }));
      if (fresh.length > 0) {
        sent = (fresh.at(-1) as RunEvent).seq;
        viewDue = true;
      }
      // Output of the steps running in this process: no id, a reconnecting page asks by journal seq.
      for (const event of live.events) messages.push({ event: 'output', data: event });
      if (!context.registry.get(runId) && events.at(-1)?.type !== 'run-end') {
        for (const event of await published.since(context.options.store, runId)) {
          messages.push({ event: 'output', data: event });
        }
      }
      if (viewDue && performance.now() >= nextViewAt) {
        const started = performance.now();
        messages.push({ event: 'view', data: context.view(events) });
        nextViewAt = performance.now() + 4 * (performance.now() - started);
        viewDue = false;
      }
      return messages;
    },
  });
}

/** Larger action bodies are refused: an action is a few fields and, at most, an answer. */
const MAX_ACTION_BYTES = 64 * 1024;

async function actionBody(request: Request): Promise<unknown> {
  const text = await request.text();
  if (text.length > MAX_ACTION_BYTES) {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `the action is larger than ${MAX_ACTION_BYTES} bytes`, {
      location: '/',
    });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, 'the action must be JSON', { location: '/' });
  }
}

/** An action: read-only, cross-site, token and `authorize` checks first; nothing changes when one refuses. */
export async function postAction(context: DashboardContext, request: Request, runId: string): Promise<Response> {
  if (context.options.readOnly) throw refused('the dashboard is read-only');
  if (!context.guard.sameOrigin(request)) throw refused("cross-site request refused (Origin is not the dashboard's)");
  if (!context.guard.tokenMatches(request)) throw refused('the session token is missing or wrong: reload the page');
  const parsed = parseAction(runId, await actionBody(request));
  await context.authorize(request, parsed.action);
  if (!(await context.options.store.getRun(runId))) {
    throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} is not in the store`, { location: runId });
  }
  const message = await performAction(
    {
      store: context.options.store,
      resume: context.options.resume,
      registry: context.registry,
      journalKey: context.options.journalKey,
    },
    parsed,
    await context.actor(request),
  );
  return jsonResponse({ ok: true, message });
}

import type { RunHandle } from '@stepwise/core';
import { DashboardContext } from './dashboard-context.js';
import { type DashboardOptions, resolveOptions } from './dashboard-options.js';
import { asset, postAction, runEvents, runJson, runPage, runsJson, runsPage, runsStream } from './dashboard-routes.js';
import { errorPageResponse, errorResponse, notFound, redirectResponse } from './http/responses.js';

/** A mounted dashboard: a Fetch API handler plus what a host needs around it. */
export interface Dashboard {
  /** Where it is mounted (`DashboardOptions.basePath`). */
  readonly basePath: string;
  /**
   * The Fetch API handler: `(request) => Promise<Response>`. Answers the paths under `basePath` and
   * 404 to the rest. Never rejects: a failure is a response (typed errors as JSON with their code).
   */
  readonly fetch: (request: Request) => Promise<Response>;
  /** Whether a path (`/stepwise/runs/…`) is the dashboard's: adapters hand the others to the host. */
  handles(pathname: string): boolean;
  /**
   * Lets the page cancel a run going on in this process: the dashboard tracks the runs it resumes
   * itself; track the ones the host starts. Returns the handle. The run is forgotten when it ends.
   */
  track(handle: RunHandle): RunHandle;
  /** Ends every live stream and waits for the runs the dashboard resumed. The store stays open. */
  close(): Promise<void>;
}

/** `/runs/<id>` and `/api/runs/<id>[/events|/actions]`, the id decoded. */
const RUN_PATH = /^\/(api\/)?runs\/([^/]+)(\/events|\/actions)?$/;

function route(context: DashboardContext, request: Request, url: URL, path: string): Promise<Response> | Response {
  const get = request.method === 'GET' || request.method === 'HEAD';
  if (get && path === '/') return runsPage(context, request, url);
  if (get && path === '/api/runs') return runsJson(context, request, url);
  if (get && path === '/api/runs/stream') return runsStream(context, request, url);
  if (get && path.startsWith('/assets/')) return asset(path.slice('/assets/'.length));
  const match = RUN_PATH.exec(path);
  if (!match) return notFound();
  const [, api, encoded, tail] = match;
  let runId: string;
  try {
    runId = decodeURIComponent(encoded as string);
  } catch {
    return notFound();
  }
  if (!api && !tail && get) return runPage(context, request, runId);
  if (api && !tail && get) return runJson(context, request, runId);
  if (api && tail === '/events' && get) return runEvents(context, request, url, runId);
  if (api && tail === '/actions' && request.method === 'POST') return postAction(context, request, runId);
  return new Response('method not allowed', { status: 405, headers: { allow: tail === '/actions' ? 'POST' : 'GET' } });
}

/**
 * The dashboard over any `RunStore`: the runs list (paged through the store, filtered, searched),
 * each run's page (the report's graph, timeline and step details, kept live from the journal over
 * Server-Sent Events), and the actions (approve, deny, answer, cancel, continue with retry or skip,
 * approve a revised plan) through core's functions, journaled with who did them. Mount it with
 * `nodeHandler` (node:http, Connect, Express), `honoHandler`, or any server that speaks Fetch;
 * or serve it alone with `serveDashboard`. Bad options throw E601 naming the option.
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const context = new DashboardContext(resolveOptions(options));
  const { basePath } = context.options;
  const handles = (pathname: string) => basePath === '' || pathname === basePath || pathname.startsWith(`${basePath}/`);
  return {
    basePath,
    handles,
    async fetch(request: Request): Promise<Response> {
      try {
        const url = new URL(request.url);
        if (!handles(url.pathname)) return notFound();
        const path = url.pathname.slice(basePath.length);
        if (path === '') return redirectResponse(`${basePath}/${url.search}`);
        return await route(context, request, url, path);
      } catch (error) {
        context.report(error);
        // A page (not the API, not a stream) is answered as a page.
        const path = new URL(request.url).pathname.slice(basePath.length);
        return path.startsWith('/api/') ? errorResponse(error) : errorPageResponse(error, basePath);
      }
    },
    track: (handle) => context.registry.track(handle),
    async close() {
      context.closing.abort();
      await context.registry.settled();
    },
  };
}

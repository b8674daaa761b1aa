import {
  ErrorCodes,
  type JournalKey,
  type ResumeOptions,
  type RunHandle,
  type RunStore,
  StepwiseError,
} from '@stepwise/core';

/**
 * What a request to the dashboard wants to do, as `authorize` sees it. `view` covers every page,
 * list and live stream (with the run, when it is about one); the others change a run.
 */
export type DashboardAction =
  | { readonly kind: 'view'; readonly runId?: string }
  | {
      readonly kind: 'respond';
      readonly runId: string;
      readonly requestId: string;
      /** `approve` / `deny` an approval request, `answer` a goal step's question. */
      readonly decision: 'approve' | 'deny' | 'answer';
    }
  | { readonly kind: 'cancel'; readonly runId: string }
  | {
      readonly kind: 'continue';
      readonly runId: string;
      readonly retry: readonly string[];
      readonly skip: readonly string[];
    }
  | {
      readonly kind: 'approve-plan';
      readonly runId: string;
      /** The digest of the plan the person saw and approves. */
      readonly planDigest: string;
    };

export type DashboardActionKind = DashboardAction['kind'];

/** Options of `createDashboard`. Every member but `store` is optional. */
export interface DashboardOptions {
  /** The journal the dashboard shows: any `RunStore` (SQLite, Postgres, `MemoryStore`). */
  readonly store: RunStore;
  /**
   * The key the runs' hash chains are keyed with (the engine's `journalKey`): a run page, its live
   * stream and the actions refuse a run whose journal was changed outside Stepwise (E507), and
   * answers are journaled with it. Without it a keyed run's chain is not checked. Default: none.
   */
  readonly journalKey?: JournalKey;
  /**
   * The path the host mounts the dashboard at, such as `/stepwise` (no trailing slash). The handler
   * answers requests under it and 404 to the rest (the adapters hand the rest to the host).
   * Default `''`: the dashboard owns every path.
   */
  readonly basePath?: string;
  /**
   * Continues a run in this process: after an answer (when nothing else is pending), a retry or a
   * skip of failed steps, or an approval of a revised plan. Usually
   * `(runId, options) => engine.resume(runId, options)` with the engine that started the run.
   * Without it, answers are journaled and the run waits for `stepwise resume`; retry, skip and
   * plan approval are refused (E601).
   */
  readonly resume?: (runId: string, options: ResumeOptions) => RunHandle | Promise<RunHandle>;
  /**
   * Decides whether a request may do what it asks; `false` answers 403 (E002) and changes nothing.
   * Called for every page, list, stream and action. Default: everything is allowed (the
   * standalone server binds to 127.0.0.1).
   */
  readonly authorize?: (request: Request, action: DashboardAction) => boolean | Promise<boolean>;
  /** Who the person behind a request is, journaled with what they do. Default `'dashboard'`. */
  readonly actor?: (request: Request) => string | Promise<string>;
  /** Shows runs and refuses every action (403, E002); the page shows no buttons. Default false. */
  readonly readOnly?: boolean;
  /**
   * How often a live page asks the store for new journal events and the runs list for changes, in
   * milliseconds. The dashboard follows the store, not the process: runs written by another
   * process appear within this interval. Default 500.
   */
  readonly pollIntervalMs?: number;
  /** Runs per page of the runs list. Default 50, at most 500. */
  readonly pageSize?: number;
  /**
   * No longer used: stores search themselves (`RunFilter.search`), through every run. Accepted and ignored.
   * @deprecated
   */
  readonly searchLimit?: number;
  /**
   * Signs the per-session anti-forgery tokens. Default: random per dashboard, so tokens die with
   * the process; give a fixed secret when several processes serve one dashboard.
   */
  readonly secret?: string | Uint8Array;
  /**
   * Origins besides the request's own whose pages may post actions (`https://admin.example.com`):
   * a proxy that changes the host. Default none.
   */
  readonly allowedOrigins?: readonly string[];
}

/** `options` with their defaults, and the base path checked. */
export interface ResolvedOptions extends Omit<DashboardOptions, 'basePath' | 'pollIntervalMs' | 'pageSize'> {
  readonly basePath: string;
  readonly pollIntervalMs: number;
  readonly pageSize: number;
  readonly readOnly: boolean;
  readonly allowedOrigins: readonly string[];
}

function invalid(location: string, message: string): StepwiseError {
  return new StepwiseError(ErrorCodes.CONFIG_INVALID, `createDashboard: ${message}`, { location });
}

function positiveNumber(value: number | undefined, fallback: number, location: string, minimum: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < minimum) {
    throw invalid(location, `${location.slice(1)} must be a number of at least ${minimum} (got ${String(value)})`);
  }
  return value;
}

/** Checks the options (E601 naming the option) and fills in the defaults. */
export function resolveOptions(options: DashboardOptions): ResolvedOptions {
  if (typeof options?.store?.read !== 'function' || typeof options.store.listRuns !== 'function') {
    throw invalid(
      '/store',
      'store must be a RunStore (createSqliteStore(…), createPostgresStore(…), new MemoryStore())',
    );
  }
  const basePath = options.basePath ?? '';
  if (typeof basePath !== 'string' || (basePath !== '' && !/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/.test(basePath))) {
    throw invalid(
      '/basePath',
      `basePath must be '' or a path such as '/stepwise' without a trailing slash (got ${JSON.stringify(basePath)})`,
    );
  }
  const pageSize = positiveNumber(options.pageSize, 50, '/pageSize', 1);
  if (!Number.isInteger(pageSize) || pageSize > 500)
    throw invalid('/pageSize', `pageSize must be a whole number from 1 to 500 (got ${pageSize})`);
  for (const name of ['resume', 'authorize', 'actor'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function')
      throw invalid(`/${name}`, `${name} must be a function`);
  }
  return {
    ...options,
    basePath,
    pollIntervalMs: positiveNumber(options.pollIntervalMs, 500, '/pollIntervalMs', 10),
    pageSize,
    readOnly: options.readOnly === true,
    allowedOrigins: [...(options.allowedOrigins ?? [])],
  };
}

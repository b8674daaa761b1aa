import { randomUUID } from 'node:crypto';
import { type Engine, ErrorCodes, type RunHandle, StepwiseError, type ToolRegistry } from '@stepwise/core';
import type { PostgresStore } from './create-postgres-store.js';
import { expectFreshRun, forgetFreshRun } from './fresh-runs.js';
import { storeError } from './postgres-connection.js';
import { QueueListener } from './queue-notifications.js';
import { onRunEndCommitted } from './run-end-listeners.js';
import { checkToolLimits, limitTools } from './tool-limits.js';
import { type ClaimedRun, claimRuns, finishQueuedRun, releaseClaim, renewClaims } from './work-queue.js';

export interface WorkerOptions {
  /** The store every worker and the engine share. */
  readonly store: PostgresStore;
  /**
   * The engine that runs claimed plans; it must journal to the same database (build it with `store`).
   * With `toolLimits`, pass a factory: it gets `tools` with the cluster-wide limits applied.
   */
  readonly engine: Engine | ((tools: ToolRegistry) => Engine);
  /** The engine's tools; required with `toolLimits`. */
  readonly tools?: ToolRegistry;
  /** Runs this worker executes at once. Default 4. */
  readonly concurrency?: number;
  /**
   * Runs a full worker may take over beyond `concurrency`: runs whose worker died (their claim
   * expired) or that were given back after a claim. They already began, so they do not wait for a
   * free slot behind new work: a full worker keeps looking for them (a quarter of `leaseTtlMs` apart,
   * at least `pollIntervalMs`) and runs
   * up to this many more at once, claiming no new run until it is back under `concurrency`.
   * Default: `concurrency`. `0`: takeover only when a slot frees (orphans still come first then).
   */
  readonly takeoverSlots?: number;
  /** Default `default`. */
  readonly queue?: string;
  /** At most this many runs of the queue held at once across all workers (give every worker the same value). Default: no limit. */
  readonly queueLimit?: number;
  /** Tool name → at most this many calls at once across all workers, e.g. `{ run_command: 4 }`. */
  readonly toolLimits?: Readonly<Record<string, number>>;
  /**
   * How long a claim lasts without a heartbeat; a dead worker's runs are claimed again after it.
   * Use the engine's `leaseTtlMs` (default 30 000 ms for both).
   */
  readonly leaseTtlMs?: number;
  /**
   * How often an idle worker looks for runs while it polls (without `notify`, or while its listening
   * connection is down, or with a `queueLimit`). Default 200 ms.
   */
  readonly pollIntervalMs?: number;
  /**
   * Listen for news of the queue (LISTEN/NOTIFY on one connection of the worker's own, outside the
   * pool) instead of polling: `enqueue` and a run given back announce themselves, and an idle worker
   * sleeps until then, looking anyway `max(pollIntervalMs, leaseTtlMs / 4)` apart for what no one
   * announces (an expired claim, news lost while the connection was down). Default `true`. `false`
   * behind a pooler in transaction mode, which does not keep a session's LISTEN.
   */
  readonly notify?: boolean;
  /** Names this worker in `work_queue.claimed_by`. Default `<hostname-free pid>:<uuid>`. */
  readonly owner?: string;
  /** A run claimed this many times without ending is failed instead of tried again. Default 100. */
  readonly maxClaims?: number;
  /** A run this worker drove ended (completed, failed, …) or was given back (`requeued`). */
  readonly onRunEnd?: (runId: string, status: string) => void;
  /** Errors that did not end a run (the database away, a claim lost). Default: ignored. */
  readonly onError?: (error: StepwiseError) => void;
}

export interface Worker {
  readonly owner: string;
  /** Runs in flight in this worker. */
  readonly active: number;
  /** Stops claiming and waits for the runs in flight to end. */
  stop(): Promise<void>;
}

/** Errors after which the run is given back to the queue instead of failed. */
function worthRetrying(error: StepwiseError): boolean {
  return (
    error.retryable ||
    error.code === ErrorCodes.LEASE_CONFLICT ||
    error.code === ErrorCodes.JOURNAL_CONFLICT ||
    error.code === ErrorCodes.STORE_UNAVAILABLE
  );
}

function checkCount(value: number | undefined, name: string, min: number): void {
  if (value !== undefined && (!Number.isInteger(value) || value < min)) {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `${name} must be an integer ≥ ${min} (got ${value})`, {
      location: name,
    });
  }
}

class PostgresWorker implements Worker {
  readonly owner: string;
  readonly #options: WorkerOptions;
  readonly #engine: Engine;
  readonly #ttlMs: number;
  readonly #concurrency: number;
  readonly #takeoverSlots: number;
  readonly #handles = new Map<string, RunHandle | undefined>();
  /**
   * Runs in flight whose `run-end` is durable: the store marked their queue row done in the same
   * transaction, so there is nothing left to record, and a renewal that misses them is no news.
   */
  readonly #ended = new Set<string>();
  #stopping = false;
  #wake: (() => void) | undefined;
  /** Ends an idle sleep when news of the queue arrives. */
  #wakeOnNews: (() => void) | undefined;
  /** News arrived since the last claim began. */
  #news = false;
  #lastNewsAt = 0;
  /** News came faster than the poll interval: polling is cheaper until the queue quiets down. */
  #busyQueue = false;
  readonly #newsTimers = new Set<NodeJS.Timeout>();
  readonly #listener: QueueListener | undefined;
  readonly #loop: Promise<void>;
  readonly #heartbeat: NodeJS.Timeout;
  readonly #stopListening: () => void;

  constructor(options: WorkerOptions) {
    checkCount(options.concurrency, 'concurrency', 1);
    checkCount(options.queueLimit, 'queueLimit', 1);
    checkCount(options.leaseTtlMs, 'leaseTtlMs', 10);
    checkCount(options.takeoverSlots, 'takeoverSlots', 0);
    this.#options = options;
    this.owner = options.owner ?? `worker:${process.pid}:${randomUUID()}`;
    this.#ttlMs = options.leaseTtlMs ?? 30_000;
    this.#concurrency = options.concurrency ?? 4;
    this.#takeoverSlots = options.takeoverSlots ?? this.#concurrency;
    this.#engine = this.#buildEngine();
    this.#stopListening = onRunEndCommitted(options.store.connection, (runId) => {
      if (this.#handles.has(runId)) this.#ended.add(runId);
    });
    this.#heartbeat = setInterval(() => this.#renew(), Math.max(10, Math.floor(this.#ttlMs / 3)));
    // With a queue limit, room frees when a run ends anywhere, which announces nothing: workers poll.
    this.#listener =
      options.notify === false || options.queueLimit !== undefined
        ? undefined
        : new QueueListener(options.store.connection, options.queue ?? 'default', (delayMs) => this.#onNews(delayMs));
    this.#loop = this.#run();
  }

  #buildEngine(): Engine {
    const { engine, tools, toolLimits, store } = this.#options;
    if (toolLimits && Object.keys(toolLimits).length > 0) {
      checkToolLimits(toolLimits);
      if (typeof engine !== 'function' || !tools) {
        throw new StepwiseError(
          ErrorCodes.CONFIG_INVALID,
          'toolLimits need `tools` and `engine` as a factory (tools) => Engine, so the engine gets the limited tools',
          { location: 'toolLimits' },
        );
      }
      const limited = limitTools(tools, {
        connection: store.connection,
        limits: toolLimits,
        owner: this.owner,
        slotTtlMs: this.#ttlMs,
      });
      return engine(limited);
    }
    if (typeof engine === 'function') {
      if (!tools)
        throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'an engine factory needs `tools`', { location: 'tools' });
      return engine(tools);
    }
    return engine;
  }

  get active(): number {
    return this.#handles.size;
  }

  #report(error: unknown, what: string): void {
    this.#options.onError?.(storeError(error, what, this.owner));
  }

  async #run(): Promise<void> {
    await this.#options.store.ready.catch((error: unknown) => this.#report(error, 'opening the store'));
    let idlePolls = 0;
    while (!this.#stopping) {
      // News that arrives while this claim is in flight may be about a run it did not see.
      this.#news = false;
      const room = this.#concurrency - this.#handles.size;
      const takeoverRoom = room + this.#takeoverSlots;
      // Full: only runs that began elsewhere and were left (takeover), within the takeover room.
      const claimed =
        room > 0 ? await this.#claim(room, false) : takeoverRoom > 0 ? await this.#claim(takeoverRoom, true) : [];
      for (const run of claimed) this.#start(run);
      // Full: it claims again when a run ends, and news it would not act on still costs Postgres a transaction.
      if (this.#handles.size >= this.#concurrency) this.#listener?.unlisten();
      if (room > 0) {
        idlePolls = claimed.length > 0 ? 0 : idlePolls + 1;
        // Room left and nothing to claim: sleep, then poll again. Full now: sleep as below.
        if (claimed.length === 0) await this.#idleSleep(idlePolls);
        else if (claimed.length === room)
          await this.#sleep(this.#takeoverSlots > 0 ? this.#takeoverDelay() : undefined);
      } else {
        // Full: sleep until a run ends, looking for runs to take over meanwhile (see #takeoverDelay).
        await this.#sleep(takeoverRoom - claimed.length > 0 ? this.#takeoverDelay() : undefined);
      }
    }
  }

  async #claim(count: number, takeoverOnly: boolean): Promise<ClaimedRun[]> {
    try {
      // The tables may not exist yet when the worker started while the server was away.
      await this.#options.store.ready;
      return await claimRuns(this.#options.store.connection, {
        queue: this.#options.queue ?? 'default',
        owner: this.owner,
        count,
        ttlMs: this.#ttlMs,
        queueLimit: this.#options.queueLimit,
        takeoverOnly,
      });
    } catch (error) {
      this.#report(error, 'claiming runs');
      return [];
    }
  }

  /**
   * Nothing to claim. Polling, an idle worker looks again soon, then less and less often (up to the
   * poll interval). Listening, it sleeps until news arrives; when news arrived meanwhile and it still
   * found nothing (another worker was first), it backs off the same way, so a burst of enqueues
   * does not make every worker claim once per run. Not listening (it was full, or the queue was busy
   * until its polls backed off to the interval), it listens and claims once more before it sleeps: a
   * run enqueued before LISTEN took effect is seen by that claim.
   */
  async #idleSleep(idlePolls: number): Promise<void> {
    const interval = this.#options.pollIntervalMs ?? 200;
    const backoff = Math.min(interval, 10 * 2 ** Math.min(idlePolls, 10));
    if (this.#busyQueue && backoff >= interval) this.#busyQueue = false;
    const listener = this.#listener;
    if (!this.#busyQueue && listener?.connected && !listener.listening && (await listener.listen())) return;
    if (!listener?.listening || this.#news) return this.#sleep(backoff);
    return this.#sleep(this.#takeoverDelay(), true);
  }

  #onNews(delayMs: number): void {
    if (delayMs > 0) {
      // A run given back with a delay: news when it can be claimed.
      const timer = setTimeout(() => {
        this.#newsTimers.delete(timer);
        this.#onNews(0);
      }, delayMs);
      this.#newsTimers.add(timer);
      return;
    }
    // Each notification costs every listening session a transaction: when news comes faster than
    // polls would, poll instead (see #idleSleep), so a burst of enqueues costs what polling did.
    const now = Date.now();
    if (now - this.#lastNewsAt < (this.#options.pollIntervalMs ?? 200)) {
      this.#busyQueue = true;
      this.#listener?.unlisten();
    }
    this.#lastNewsAt = now;
    this.#news = true;
    this.#wakeOnNews?.();
  }

  /**
   * A full worker looks for runs to take over a quarter of a lease TTL apart (at least the poll
   * interval): a dead worker's run waits at most that long after its claim expired, and a busy
   * cluster does not poll the database for what is rare.
   */
  #takeoverDelay(): number {
    return Math.max(this.#options.pollIntervalMs ?? 200, this.#ttlMs / 4);
  }

  /** Sleeps until a run ends (`wake`), or `delayMs` (jittered) when given, or news arrives (`onNews`). */
  #sleep(delayMs: number | undefined, onNews = false): Promise<void> {
    const poll = delayMs !== undefined;
    const delay = (delayMs ?? 0) * (0.75 + Math.random() / 2);
    return new Promise((resolve) => {
      const timer = poll ? setTimeout(finish, delay) : undefined;
      const self = this;
      function finish() {
        if (timer) clearTimeout(timer);
        self.#wake = undefined;
        self.#wakeOnNews = undefined;
        resolve();
      }
      this.#wake = finish;
      if (onNews) this.#wakeOnNews = finish;
    });
  }

  #start(run: ClaimedRun): void {
    this.#handles.set(run.runId, undefined);
    void this.#execute(run).finally(() => {
      this.#handles.delete(run.runId);
      this.#ended.delete(run.runId);
      this.#wake?.();
    });
  }

  async #execute(run: ClaimedRun): Promise<void> {
    const { connection } = this.#options.store;
    let status: string;
    try {
      status = await this.#drive(run);
    } catch (thrown) {
      const error = storeError(thrown, `running ${run.runId}`, run.runId);
      if (worthRetrying(error) && run.claims < (this.#options.maxClaims ?? 100)) {
        // Another owner's lease may still be live: look again once a good part of it passed.
        const delay = error.code === ErrorCodes.LEASE_CONFLICT ? this.#ttlMs / 4 : Math.min(200 * run.claims, 5_000);
        await releaseClaim(
          connection,
          this.#options.queue ?? 'default',
          run.runId,
          this.owner,
          delay,
          error.message,
        ).catch((failure: unknown) => this.#report(failure, `giving back ${run.runId}`));
        this.#options.onRunEnd?.(run.runId, 'requeued');
        return;
      }
      status = 'failed';
      await finishQueuedRun(connection, run.runId, status, error.message).catch((failure: unknown) =>
        this.#report(failure, `recording the end of ${run.runId}`),
      );
      this.#options.onRunEnd?.(run.runId, status);
      return;
    }
    // Its run-end marked the queue row done (one commit less per run); a replayed run has none to land.
    if (this.#ended.has(run.runId)) {
      this.#options.onRunEnd?.(run.runId, status);
      return;
    }
    // If this does not land, the claim expires and the next worker sees the run ended (see #drive).
    await finishQueuedRun(connection, run.runId, status).catch((failure: unknown) =>
      this.#report(failure, `recording the end of ${run.runId}`),
    );
    this.#options.onRunEnd?.(run.runId, status);
  }

  /** Starts the run, or resumes it from its journal when a previous worker got that far. */
  async #drive(run: ClaimedRun): Promise<string> {
    // A first claim: no worker got anywhere with it, so there is no journal to look at (a run that
    // has one anyway, written outside the queue, is replayed or resumed by `engine.run` itself).
    const { store } = this.#options;
    const summary = run.claims === 1 ? undefined : await store.getRun(run.runId);
    if (summary && summary.status !== 'running') return summary.status;
    // `engine.run` looks at the run first (given ids may name an existing run), then takes its lease:
    // both answered from memory (the lease, when the claim took it).
    if (!summary) expectFreshRun(store.connection, run.runId, run.lease);
    try {
      const handle = summary
        ? this.#engine.resume(run.runId)
        : this.#engine.run(run.plan, { runId: run.runId, ...run.options });
      this.#handles.set(run.runId, handle);
      const result = await handle.result;
      return result.status;
    } finally {
      // Spent by then, unless the engine failed before it looked: then the claimed lease is given back.
      const unused = forgetFreshRun(store.connection, run.runId);
      if (unused) await store.releaseLease(unused).catch((error) => this.#report(error, 'releasing'));
    }
  }

  async #renew(): Promise<void> {
    const runIds = [...this.#handles.keys()].filter((runId) => !this.#ended.has(runId));
    try {
      const lost = await renewClaims(this.#options.store.connection, this.owner, runIds, this.#ttlMs);
      for (const runId of lost) {
        if (this.#ended.has(runId)) continue;
        // The run's lease (fenced) still decides who writes; this is only news.
        this.#options.onError?.(
          new StepwiseError(ErrorCodes.LEASE_CONFLICT, `worker ${this.owner} lost its claim on ${runId}`, {
            location: runId,
          }),
        );
      }
    } catch (error) {
      this.#report(error, 'renewing claims');
    }
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    await this.#loop;
    while (this.#handles.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    clearInterval(this.#heartbeat);
    this.#stopListening();
    for (const timer of this.#newsTimers) clearTimeout(timer);
    await this.#listener?.close();
  }
}

/**
 * Starts a worker: it claims runs from a queue in Postgres (`FOR UPDATE SKIP LOCKED`), heartbeats its
 * claims, and drives each run with `engine.run` or, when a previous worker died mid-run,
 * `engine.resume` — the journal and the run's fenced lease make that safe. Start as many as you like,
 * on as many machines as you like; there is no coordinator.
 */
export function createWorker(options: WorkerOptions): Worker {
  return new PostgresWorker(options);
}

import { createHash } from 'node:crypto';
import pg from 'pg';
import type { PostgresConnection } from './postgres-connection.js';

/**
 * The channel a queue's news goes out on (`enqueue`, a run given back): a hash, because channel
 * names are identifiers of at most 63 bytes and a schema and a queue name may be longer together.
 */
export function queueChannel(schema: string, queue: string): string {
  return `stepwise_${createHash('sha256').update(`${schema}\u0000${queue}`).digest('hex').slice(0, 32)}`;
}

/** How long a listener that lost its connection waits before it connects again. */
const RECONNECT_MS = 1_000;

/**
 * One connection (outside the pool: a session of its own) that LISTENs on the queue's channel while
 * its worker wants news, and calls `onNews(delayMs)` for each notification; `delayMs` is how long
 * until the announced run can be claimed (a run given back after a delay), 0 for a new run. A worker
 * wants news only while it has room and found nothing to claim: Postgres reads each notification
 * in a transaction of each listening session, so a full worker stops listening (`unlisten`) rather
 * than pay for news it would not act on. The listener connects again by itself after an error or a
 * server restart, listens again if wanted, and then calls `onNews(0)`: what was announced while it
 * was away is claimed then.
 */
export class QueueListener {
  readonly #connection: PostgresConnection;
  readonly #channel: string;
  readonly #onNews: (delayMs: number) => void;
  #client: pg.Client | undefined;
  /** The connection is up (LISTEN and UNLISTEN can be sent). */
  #connected = false;
  /** LISTEN was acknowledged on the current connection, and no UNLISTEN sent since. */
  #listening = false;
  #wanted = true;
  /** LISTEN and UNLISTEN in the order they were asked for. */
  #commands: Promise<unknown> = Promise.resolve();
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(connection: PostgresConnection, queue: string, onNews: (delayMs: number) => void) {
    this.#connection = connection;
    this.#channel = queueChannel(connection.schema, queue);
    this.#onNews = onNews;
    void this.#connect();
  }

  /** News arrives now: every notification committed from now on reaches `onNews`. */
  get listening(): boolean {
    return this.#listening;
  }

  /** The connection is up, so `listen()` can succeed. */
  get connected(): boolean {
    return this.#connected;
  }

  /** Starts listening; true once LISTEN is acknowledged, false when the connection is down. */
  listen(): Promise<boolean> {
    this.#wanted = true;
    return this.#send('listen').then(() => this.#listening);
  }

  /** Stops listening (a full worker): no notification reaches this session until `listen()`. */
  unlisten(): void {
    this.#wanted = false;
    if (!this.#listening) return;
    this.#listening = false;
    void this.#send('unlisten');
  }

  #send(command: 'listen' | 'unlisten'): Promise<unknown> {
    const client = this.#client;
    this.#commands = this.#commands.then(async () => {
      if (!client || client !== this.#client || !this.#connected) return;
      // Asked for and undone meanwhile: the later wish decides.
      if ((command === 'listen') !== this.#wanted) return;
      if (command === 'listen' && this.#listening) return;
      try {
        await client.query(`${command} "${this.#channel}"`);
        if (command === 'listen' && client === this.#client) this.#listening = this.#wanted;
      } catch {
        this.#lost(client);
      }
    });
    return this.#commands;
  }

  async #connect(): Promise<void> {
    this.#retry = undefined;
    // The pool's own settings (connection string or parameters), so the listener reaches the same database.
    const client = new pg.Client(this.#connection.pool.options);
    this.#client = client;
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    client.on('notification', (message) => {
      if (message.channel === this.#channel) this.#onNews(Math.max(0, Number(message.payload) || 0));
    });
    try {
      await client.connect();
    } catch {
      this.#lost(client);
      return;
    }
    if (this.#closed || this.#client !== client) return;
    this.#connected = true;
    if (this.#wanted) await this.#send('listen');
    if (this.#listening) this.#onNews(0);
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#connected = false;
    this.#listening = false;
    client.end().catch(() => undefined);
    if (!this.#closed) this.#retry = setTimeout(() => void this.#connect(), RECONNECT_MS);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#connected = false;
    this.#listening = false;
    if (this.#retry) clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }
}

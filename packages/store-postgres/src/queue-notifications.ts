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
 * One LISTEN connection (outside the pool: a session of its own) that calls `onNews(delayMs)` for each
 * notification on the queue's channel; `delayMs` is how long until the announced run can be claimed
 * (a run given back after a delay), 0 for a new run. It connects again by itself after an error or a
 * server restart, and calls `onNews(0)` once it listens again: what was announced while it was away
 * is claimed then. `listening` says whether news arrives now (callers poll while it does not).
 */
export class QueueListener {
  readonly #connection: PostgresConnection;
  readonly #channel: string;
  readonly #onNews: (delayMs: number) => void;
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;
  listening = false;

  constructor(connection: PostgresConnection, queue: string, onNews: (delayMs: number) => void) {
    this.#connection = connection;
    this.#channel = queueChannel(connection.schema, queue);
    this.#onNews = onNews;
    void this.#connect();
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
      await client.query(`listen "${this.#channel}"`);
    } catch {
      this.#lost(client);
      return;
    }
    if (this.#closed || this.#client !== client) return;
    this.listening = true;
    this.#onNews(0);
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.listening = false;
    client.end().catch(() => undefined);
    if (!this.#closed) this.#retry = setTimeout(() => void this.#connect(), RECONNECT_MS);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.listening = false;
    if (this.#retry) clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }
}

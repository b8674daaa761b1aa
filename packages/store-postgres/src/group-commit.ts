import type pg from 'pg';

/**
 * One append's part of a shared transaction. It calls `writing()` right before its first write:
 * a throw before that (a refused lease, a seq conflict) wrote nothing, and fails this part alone.
 */
export type GroupWork = (client: pg.PoolClient, writing: () => void) => Promise<void>;

/**
 * The shared transaction rolled back for a reason that was not this part's: nothing of it was
 * committed, and it may be run again on its own.
 */
export class GroupAborted extends Error {
  constructor(override readonly cause: unknown) {
    super('the shared transaction rolled back');
  }
}

interface Member {
  readonly work: GroupWork;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit of one process's appends: while a transaction is in flight, the appends that come
 * meanwhile (other runs of the same worker) wait, then share the next transaction and its one
 * commit. A lone append runs at once, as before. Parts run one after the other in the order they
 * came; a part refused before it wrote fails alone, a part whose write fails rolls the transaction
 * back and the others learn it (`GroupAborted`), to run again on their own.
 */
export class GroupCommit {
  #waiting: Member[] = [];
  #draining = false;

  constructor(private readonly pool: pg.Pool) {}

  /** Settles once `work` committed (with the others of its group), or with why it did not. */
  run(work: GroupWork): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ work, resolve, reject });
      if (!this.#draining) void this.#drain();
    });
  }

  /** Runs `work` in a transaction of its own (its failure is its answer). */
  alone(work: GroupWork): Promise<void> {
    return new Promise((resolve, reject) => {
      void this.#commit([{ work, resolve, reject }]);
    });
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#waiting.length > 0) {
        const members = this.#waiting;
        this.#waiting = [];
        await this.#commit(members);
      }
    } finally {
      this.#draining = false;
    }
  }

  async #commit(members: readonly Member[]): Promise<void> {
    const refused = new Map<Member, unknown>();
    let culprit: Member | undefined;
    try {
      await this.#transaction(async (client) => {
        for (const member of members) {
          let wrote = false;
          try {
            await member.work(client, () => {
              wrote = true;
            });
          } catch (error) {
            if (wrote) {
              culprit = member;
              throw error;
            }
            refused.set(member, error);
          }
        }
      });
    } catch (error) {
      for (const member of members) {
        if (refused.has(member)) member.reject(refused.get(member));
        // Alone in its transaction, its own failure is its answer.
        else if (member === culprit || members.length === 1) member.reject(error);
        else member.reject(new GroupAborted(error));
      }
      return;
    }
    for (const member of members) {
      if (refused.has(member)) member.reject(refused.get(member));
      else member.resolve();
    }
  }

  /**
   * `body` between BEGIN and COMMIT on a client of its own, rolled back when it throws. Plain
   * statements on the pool's client, not a query builder: this runs once per commit of every worker.
   */
  async #transaction(body: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    const control = (text: string) =>
      client.query(text).catch((error: Error) => {
        // A connection that failed is not given back to the pool.
        if (isConnectionError(error)) broken ??= error;
        throw error;
      });
    try {
      await control('begin');
      try {
        await body(client);
      } catch (error) {
        await control('rollback').catch((failure: Error) => {
          broken ??= failure;
        });
        throw error;
      }
      await control('commit');
    } finally {
      client.release(broken);
    }
  }
}

/** An error after which the client is not fit for another transaction (its connection failed). */
function isConnectionError(error: unknown): boolean {
  const code = String((error as { code?: unknown })?.code ?? '');
  return code === '' || code.startsWith('08') || code.startsWith('57P');
}

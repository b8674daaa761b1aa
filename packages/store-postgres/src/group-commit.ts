import { StepwiseError } from '@stepwise/core';
import type pg from 'pg';

/**
 * One member of a shared transaction: an append checks (and locks what it writes) and returns what
 * to write; other work (taking or releasing a lease) runs its statement and returns nothing. A
 * StepwiseError thrown here (a refused lease, a seq conflict) wrote nothing and fails this member
 * alone; any other error (the database's) rolls the transaction back.
 */
export type GroupWork<Part, Row> = (client: pg.PoolClient, locked: Row | undefined) => Promise<Part | undefined>;

/** Writes the parts of a group in its transaction (one statement for all of them). */
export type GroupWrite<Part> = (client: pg.PoolClient, parts: readonly Part[]) => Promise<void>;

/**
 * Locks what the members asked for (each append its run's row), one statement for all, before any
 * member's work: each gets its row, or `undefined` when the lock was refused.
 */
export type GroupLock<Request, Row> = (
  client: pg.PoolClient,
  requests: readonly Request[],
) => Promise<readonly (Row | undefined)[]>;

/**
 * The shared transaction rolled back for a reason that may not be this part's: nothing of it was
 * committed, and it may be run again on its own.
 */
export class GroupAborted extends Error {
  constructor(override readonly cause: unknown) {
    super('the shared transaction rolled back');
  }
}

/**
 * Writes parts that need no transaction around them, one statement for all (it fences and locks
 * itself); whether each part was written.
 */
export type GroupFencedWrite<Part> = (parts: readonly Part[]) => Promise<boolean[]>;

/** What a member that can be written without a transaction gives: its part, prepared only when that is the way. */
export type FencedPart<Part> = () => Part;

interface Member<Part, Request, Row> {
  readonly work: GroupWork<Part, Row>;
  readonly request: Request | undefined;
  readonly fenced?: FencedPart<Part> | undefined;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit of one process's appends: while a transaction is in flight, the appends that come
 * meanwhile (other runs of the same worker) wait, then share the next transaction, its one write
 * statement and its one commit. A lone append runs at once. Parts are checked one after the other
 * in the order they came; a part refused fails alone; when the shared write fails, the transaction
 * rolls back and the others learn it (`GroupAborted`), to run again on their own.
 */
export class GroupCommit<Part, Request, Row> {
  #waiting: Member<Part, Request, Row>[] = [];
  #draining = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly write: GroupWrite<Part>,
    private readonly lock: GroupLock<Request, Row>,
    private readonly fencedWrite?: GroupFencedWrite<Part>,
  ) {}

  /** Settles once `work`'s part committed (with the others of its group), or with why it did not. */
  run(work: GroupWork<Part, Row>, request?: Request, fenced?: FencedPart<Part>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ work, request, fenced, resolve, reject });
      if (!this.#draining) void this.#drain();
    });
  }

  /** Runs `work` in a transaction of its own (its failure is its answer). */
  alone(work: GroupWork<Part, Row>, request?: Request): Promise<void> {
    return new Promise((resolve, reject) => {
      void this.#commit([{ work, request, resolve, reject }]);
    });
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#waiting.length > 0) {
        const members = this.#waiting;
        this.#waiting = [];
        if (this.fencedWrite && members.every((member) => member.fenced)) await this.#writeFenced(members);
        else await this.#commit(members);
      }
    } finally {
      this.#draining = false;
    }
  }

  async #commit(members: readonly Member<Part, Request, Row>[]): Promise<void> {
    const refused = new Map<Member<Part, Request, Row>, unknown>();
    let culprit: Member<Part, Request, Row> | undefined;
    try {
      await this.#transaction(async (client) => {
        const parts: Part[] = [];
        const rows = await this.#locked(client, members);
        for (const [index, member] of members.entries()) {
          try {
            const part = await member.work(client, rows[index]);
            if (part !== undefined) parts.push(part);
          } catch (error) {
            // A refusal leaves the transaction usable; a database error does not.
            if (!StepwiseError.isInstance(error)) culprit = member;
            if (culprit) throw error;
            refused.set(member, error);
          }
        }
        if (parts.length > 0) await this.write(client, parts);
      });
    } catch (error) {
      const writers = members.filter((member) => !refused.has(member));
      for (const member of members) {
        if (refused.has(member)) member.reject(refused.get(member));
        // Alone in the write, its own failure is its answer.
        else if (member === culprit || writers.length === 1) member.reject(error);
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
   * A group whose every member can be written without a transaction: one statement, one round trip.
   * A member it did not write (fenced off, or its run moved on elsewhere) learns it as `GroupAborted`
   * and is run again on its own, where its lock and checks say why.
   */
  async #writeFenced(members: readonly Member<Part, Request, Row>[]): Promise<void> {
    let written: boolean[];
    try {
      const parts = members.map((member) => (member.fenced as FencedPart<Part>)());
      written = await (this.fencedWrite as GroupFencedWrite<Part>)(parts);
    } catch (error) {
      for (const member of members) member.reject(new GroupAborted(error));
      return;
    }
    const skipped = new GroupAborted(new Error('the run was not written: its row was fenced off or moved on'));
    for (const [index, member] of members.entries()) {
      if (written[index]) member.resolve();
      else member.reject(skipped);
    }
  }

  /** Each member's locked row (`undefined` for a member that asked for none, or was refused). */
  async #locked(client: pg.PoolClient, members: readonly Member<Part, Request, Row>[]): Promise<(Row | undefined)[]> {
    const asking = members.filter((member) => member.request !== undefined);
    if (asking.length === 0) return [];
    const rows = await this.lock(
      client,
      asking.map((member) => member.request as Request),
    );
    const byMember = new Map(asking.map((member, index) => [member, rows[index]]));
    return members.map((member) => byMember.get(member));
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

import { randomUUID } from 'node:crypto';
import { type AnyTool, ErrorCodes, StepwiseError, type ToolRegistry } from '@stepwise/core';
import { sleep } from '@stepwise/core/engine';
import { sql } from 'kysely';
import { type PostgresConnection, storeError } from './postgres-connection.js';

export interface ToolLimitOptions {
  readonly connection: PostgresConnection;
  /** Tool name → at most this many calls at once across every process sharing the schema. */
  readonly limits: Readonly<Record<string, number>>;
  /** Names the holder of a slot (for `tool_slots` readers); default a random id. */
  readonly owner?: string;
  /** A slot whose holder stops renewing it frees after this long. Default 30 000 ms. */
  readonly slotTtlMs?: number;
  /** How often a call waiting for a slot looks again. Default 50 ms. */
  readonly pollIntervalMs?: number;
}

export function checkToolLimits(limits: Readonly<Record<string, number>>): void {
  for (const [tool, limit] of Object.entries(limits)) {
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
      throw new StepwiseError(
        ErrorCodes.CONFIG_INVALID,
        `the limit for tool "${tool}" must be an integer from 1 to 10 000`,
        {
          location: `toolLimits/${tool}`,
        },
      );
    }
  }
}

class SlotTable {
  readonly #prepared = new Map<string, Promise<void>>();

  constructor(
    readonly connection: PostgresConnection,
    readonly ttlMs: number,
  ) {}

  /** Creates the tool's slot rows 0…limit-1 once per process. */
  #prepare(tool: string, limit: number): Promise<void> {
    const key = `${tool}/${limit}`;
    let prepared = this.#prepared.get(key);
    if (!prepared) {
      prepared = sql`insert into ${this.connection.table('tool_slots')} (tool, slot)
        select ${tool}, generate_series(0, ${limit - 1}) on conflict do nothing`
        .execute(this.connection.db)
        .then(() => undefined);
      prepared.catch(() => this.#prepared.delete(key));
      this.#prepared.set(key, prepared);
    }
    return prepared;
  }

  async take(tool: string, limit: number, holder: string): Promise<number | undefined> {
    await this.#prepare(tool, limit);
    const slots = this.connection.table('tool_slots');
    const taken = await sql<{ slot: number }>`
      update ${slots} s set holder = ${holder}, expires_at = clock_timestamp() + ${this.ttlMs} * interval '1 millisecond'
      from (select tool, slot from ${slots}
            where tool = ${tool} and slot < ${limit} and (holder is null or expires_at <= clock_timestamp())
            order by slot limit 1 for update skip locked) free
      where s.tool = free.tool and s.slot = free.slot
      returning s.slot`.execute(this.connection.db);
    return taken.rows[0]?.slot;
  }

  async renew(tool: string, slot: number, holder: string): Promise<void> {
    await this.connection.db
      .updateTable('tool_slots')
      .set({ expires_at: sql`clock_timestamp() + ${this.ttlMs} * interval '1 millisecond'` })
      .where('tool', '=', tool)
      .where('slot', '=', slot)
      .where('holder', '=', holder)
      .execute();
  }

  async free(tool: string, slot: number, holder: string): Promise<void> {
    await this.connection.db
      .updateTable('tool_slots')
      .set({ holder: null, expires_at: null })
      .where('tool', '=', tool)
      .where('slot', '=', slot)
      .where('holder', '=', holder)
      .execute();
  }
}

/** Waits for a free slot; a database that is briefly away is waited for too (until the call is aborted). */
async function waitForSlot(
  table: SlotTable,
  tool: string,
  limit: number,
  holder: string,
  signal: AbortSignal,
  pollMs: number,
): Promise<number> {
  for (;;) {
    try {
      const slot = await table.take(tool, limit, holder);
      if (slot !== undefined) return slot;
    } catch (error) {
      const translated = storeError(error, `taking a slot of tool ${tool}`, tool);
      if (!translated.retryable) throw translated;
    }
    await sleep(pollMs * (0.5 + Math.random()), signal);
  }
}

function limitedTool(tool: AnyTool, limit: number, table: SlotTable, owner: string, pollMs: number): AnyTool {
  return {
    ...tool,
    async execute(input, context) {
      const holder = `${owner}:${context.executionId}:${randomUUID()}`;
      const slot = await waitForSlot(table, tool.name, limit, holder, context.signal, pollMs);
      const heartbeat = setInterval(
        () => table.renew(tool.name, slot, holder).catch(() => undefined),
        Math.max(50, table.ttlMs / 3),
      );
      heartbeat.unref();
      try {
        return await tool.execute(input, context);
      } finally {
        clearInterval(heartbeat);
        // If the database is away the slot frees itself when its time runs out.
        await table.free(tool.name, slot, holder).catch(() => undefined);
      }
    },
  };
}

/**
 * The same registry (aliases, preconditions, everything) whose limited tools first take one of their
 * tool's slots in Postgres: at most `limits[tool]` calls of it run at once across all workers.
 * A call waiting for a slot honours its AbortSignal (timeouts, cancel).
 */
export function limitTools(registry: ToolRegistry, options: ToolLimitOptions): ToolRegistry {
  checkToolLimits(options.limits);
  const table = new SlotTable(options.connection, options.slotTtlMs ?? 30_000);
  const owner = options.owner ?? `${process.pid}:${randomUUID()}`;
  const pollMs = options.pollIntervalMs ?? 50;
  const wrapped = new Map<string, AnyTool>();
  const wrap = (tool: AnyTool | undefined): AnyTool | undefined => {
    const limit = tool ? options.limits[tool.name] : undefined;
    if (!tool || limit === undefined) return tool;
    let limited = wrapped.get(tool.name);
    if (!limited) {
      limited = limitedTool(tool, limit, table, owner, pollMs);
      wrapped.set(tool.name, limited);
    }
    return limited;
  };
  return new Proxy(registry, {
    get(target, property) {
      if (property === 'get') return (name: string) => wrap(target.get(name));
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

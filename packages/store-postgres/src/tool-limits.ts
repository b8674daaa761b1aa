import { randomUUID } from 'node:crypto';
import {
  type AnyTool,
  ErrorCodes,
  StepwiseError,
  type ToolClaim,
  type ToolClaimContext,
  type ToolRegistry,
} from '@stepwise/core';
import { sleep } from '@stepwise/core/engine';
import { sql } from 'kysely';
import { type PostgresConnection, storeError } from './postgres-connection.js';

export interface ToolLimitOptions {
  readonly connection: PostgresConnection;
  /** Tool name → at most this many calls at once across every process sharing the schema. */
  readonly limits: Readonly<Record<string, number>>;
  /** Names the holder of a slot (for `tool_slots` readers); default a random id. */
  readonly owner?: string;
  /**
   * A slot whose holder stops renewing it frees after this long. Default: the lease time-to-live of
   * the run that takes it (its engine's `leaseTtlMs`), so a dead worker's slots free when its runs
   * can be taken over; 30 000 ms for a call outside a leased run.
   */
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

/** A slot's time-to-live when neither the options nor the run's lease give one. */
const DEFAULT_SLOT_TTL_MS = 30_000;

function checkSlotTtl(ttlMs: number): void {
  if (!Number.isInteger(ttlMs) || ttlMs < 10 || ttlMs > 86_400_000) {
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `slotTtlMs must be an integer from 10 to 86 400 000 (got ${ttlMs})`,
      {
        location: 'slotTtlMs',
      },
    );
  }
}

class SlotTable {
  readonly #prepared = new Map<string, Promise<void>>();

  constructor(readonly connection: PostgresConnection) {}

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

  async take(claim: SlotClaim, limit: number): Promise<number | undefined> {
    await this.#prepare(claim.tool, limit);
    const slots = this.connection.table('tool_slots');
    const taken = await sql<{ slot: number }>`
      update ${slots} s set holder = ${claim.holder}, expires_at = clock_timestamp() + ${claim.ttlMs} * interval '1 millisecond'
      from (select tool, slot from ${slots}
            where tool = ${claim.tool} and slot < ${limit} and (holder is null or expires_at <= clock_timestamp())
            order by slot limit 1 for update skip locked) free
      where s.tool = free.tool and s.slot = free.slot
      returning s.slot`.execute(this.connection.db);
    return taken.rows[0]?.slot;
  }

  async renew(claim: SlotClaim, slot: number): Promise<void> {
    await this.connection.db
      .updateTable('tool_slots')
      .set({ expires_at: sql`clock_timestamp() + ${claim.ttlMs} * interval '1 millisecond'` })
      .where('tool', '=', claim.tool)
      .where('slot', '=', slot)
      .where('holder', '=', claim.holder)
      .execute();
  }

  async free(claim: SlotClaim, slot: number): Promise<void> {
    await this.connection.db
      .updateTable('tool_slots')
      .set({ holder: null, expires_at: null })
      .where('tool', '=', claim.tool)
      .where('slot', '=', slot)
      .where('holder', '=', claim.holder)
      .execute();
  }
}

/** Who asks for a slot of which tool, and how long the slot lives unrenewed. */
interface SlotClaim {
  readonly tool: string;
  readonly holder: string;
  readonly ttlMs: number;
}

/** Waits for a free slot; a database that is briefly away is waited for too (until the call is aborted). */
async function waitForSlot(
  table: SlotTable,
  claim: SlotClaim,
  limit: number,
  signal: AbortSignal,
  pollMs: number,
): Promise<number> {
  for (;;) {
    // Every round asks the signal first: a run that stopped or lost its lease stops waiting.
    signal.throwIfAborted();
    try {
      const slot = await table.take(claim, limit);
      if (slot !== undefined) return slot;
    } catch (error) {
      const translated = storeError(error, `taking a slot of tool ${claim.tool}`, claim.tool);
      if (!translated.retryable) throw translated;
    }
    await sleep(pollMs * (0.5 + Math.random()), signal);
  }
}

interface LimitSettings {
  readonly limit: number;
  readonly table: SlotTable;
  readonly owner: string;
  readonly pollMs: number;
  readonly slotTtlMs: number | undefined;
}

/**
 * The tool with a slot to take before each call (`acquire`): the kernel waits for it before the
 * call is journaled, so a worker that dies or loses its run while waiting leaves no `tool-call`.
 * The slot is heartbeated until the call settles, and freed then.
 */
function limitedTool(tool: AnyTool, settings: LimitSettings): AnyTool {
  const { limit, table, owner, pollMs } = settings;
  return {
    ...tool,
    async acquire(context: ToolClaimContext): Promise<ToolClaim> {
      const claim: SlotClaim = {
        tool: tool.name,
        holder: `${owner}:${context.executionId}:${randomUUID()}`,
        ttlMs: settings.slotTtlMs ?? context.leaseTtlMs ?? DEFAULT_SLOT_TTL_MS,
      };
      const slot = await waitForSlot(table, claim, limit, context.signal, pollMs);
      // If the database is away the slot frees itself when its time runs out.
      const free = () => table.free(claim, slot).catch(() => undefined);
      let inner: ToolClaim | undefined;
      try {
        inner = await tool.acquire?.(context);
      } catch (error) {
        await free();
        throw error;
      }
      const heartbeat = setInterval(
        () => table.renew(claim, slot).catch(() => undefined),
        Math.max(50, claim.ttlMs / 3),
      );
      heartbeat.unref();
      return {
        async release() {
          clearInterval(heartbeat);
          try {
            await inner?.release();
          } finally {
            await free();
          }
        },
      };
    },
  };
}

/**
 * The same registry (aliases, preconditions, everything) whose limited tools first take one of their
 * tool's slots in Postgres: at most `limits[tool]` calls of it run at once across all workers.
 * The slot is taken before the call is journaled (the tool's `acquire`); the wait ends when the
 * run stops or loses its lease, and the step's timeout starts once the slot is taken.
 */
export function limitTools(registry: ToolRegistry, options: ToolLimitOptions): ToolRegistry {
  checkToolLimits(options.limits);
  const table = new SlotTable(options.connection);
  const owner = options.owner ?? `${process.pid}:${randomUUID()}`;
  const pollMs = options.pollIntervalMs ?? 50;
  if (options.slotTtlMs !== undefined) checkSlotTtl(options.slotTtlMs);
  const wrapped = new Map<string, AnyTool>();
  const wrap = (tool: AnyTool | undefined): AnyTool | undefined => {
    const limit = tool ? options.limits[tool.name] : undefined;
    if (!tool || limit === undefined) return tool;
    let limited = wrapped.get(tool.name);
    if (!limited) {
      limited = limitedTool(tool, { limit, table, owner, pollMs, slotTtlMs: options.slotTtlMs });
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

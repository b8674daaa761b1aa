// One worker process for chaos.mjs: a DAG engine over the Postgres store, and tools whose effects go
// to side tables in the same Postgres (what the chaos run counts afterwards).
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineTool, ToolError, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { createPostgresStore, createWorker } from '@stepwise/store-postgres';
import pg from 'pg';

const { CHAOS_URL: url, CHAOS_SCHEMA: schema, CHAOS_SIDE: side, CHAOS_STARTED: startedDirectory } = process.env;
const startedFile = join(startedDirectory, `${process.pid}.txt`);
const leaseTtlMs = Number(process.env.CHAOS_TTL_MS ?? 1500);
const side_ = (table) => `${side}.${table}`;
const pool = new pg.Pool({ connectionString: url, max: 4 });
pool.on('error', () => undefined);
pool.on('connect', (client) => client.on('error', () => undefined));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const input = { type: 'object', properties: { sleepMs: { type: 'number' } }, additionalProperties: true };

/**
 * Every call that entered a tool body: what "the tool body started" means in the report. Written
 * synchronously, before the body awaits anything, to a file of this process: a SIGKILL right after
 * keeps the line (the kernel's page cache has it), where an insert in Postgres could still be in
 * flight and count a body that had started as one that never did.
 */
function started(context) {
  appendFileSync(startedFile, `${context.executionId}\n`);
}

/**
 * A statement of a tool whose retry is safe (idempotent, or under the call's idempotency key): not
 * reaching Postgres (its restart) is a retryable failure, which the plan's retry policy runs again.
 */
async function retryableQuery(text, values) {
  try {
    return await pool.query(text, values);
  } catch (error) {
    throw new ToolError({ message: `Postgres: ${error.message}`, retryable: true });
  }
}

const tools = new ToolRegistry([
  defineTool({
    name: 'ledger_write',
    description: 'Idempotent: records the step once.',
    input,
    effect: 'write',
    idempotent: true,
    async execute(args, context) {
      started(context);
      await sleep(args.sleepMs ?? 0);
      await retryableQuery(
        `insert into ${side_('ledger')} (run_id, step_id) values ($1, $2) on conflict (run_id, step_id) do nothing`,
        [context.runId, context.stepId],
      );
      return { ok: true };
    },
  }),
  defineTool({
    name: 'notify_once',
    description: 'Not idempotent, cannot reconcile: every call is an effect.',
    input,
    effect: 'write',
    async execute(args, context) {
      started(context);
      await sleep(args.sleepMs ?? 0);
      await pool.query(`insert into ${side_('notifications')} (run_id, step_id) values ($1, $2)`, [
        context.runId,
        context.stepId,
      ]);
      return { ok: true };
    },
  }),
  defineTool({
    name: 'payment_insert',
    description: 'Not idempotent, reconciles: a payment row under the call’s idempotency key.',
    input,
    effect: 'write',
    async execute(args, context) {
      started(context);
      await sleep(args.sleepMs ?? 0);
      const { rows } = await retryableQuery(
        `insert into ${side_('payments')} (idempotency_key, run_id, step_id) values ($1, $2, $3)
         on conflict (idempotency_key) do nothing returning idempotency_key`,
        [context.idempotencyKey, context.runId, context.stepId],
      );
      // The payment was made already: the effect was asked for again (the key kept it single). Counted.
      if (rows.length === 0) {
        await retryableQuery(`insert into ${side_('doubled')} (run_id, step_id, pid) values ($1, $2, $3)`, [
          context.runId,
          context.stepId,
          process.pid,
        ]);
      }
      await sleep(args.sleepMs ?? 0);
      return { key: context.idempotencyKey };
    },
    async reconcile(context) {
      // Asked on resume, maybe while Postgres restarts: a few tries before answering "unknown" (E309).
      for (let attempt = 1; ; attempt++) {
        try {
          const { rows } = await pool.query(`select 1 from ${side_('payments')} where idempotency_key = $1`, [
            context.idempotencyKey,
          ]);
          return rows.length > 0 ? { status: 'done', output: { key: context.idempotencyKey } } : { status: 'not-done' };
        } catch (error) {
          if (attempt === 10) throw error;
          await sleep(300);
        }
      }
    },
  }),
]);

const store = createPostgresStore({ connectionString: url, schema, maxConnections: 8 });
const worker = createWorker({
  store,
  engine: dagEngine({ tools, store, leaseTtlMs }),
  concurrency: 4,
  leaseTtlMs,
  pollIntervalMs: 100,
});
for (;;) {
  try {
    await store.getRun('probe');
    break;
  } catch {
    await sleep(200);
  }
}
process.stdout.write(`${JSON.stringify({ ready: worker.owner })}\n`);

// One Stepwise worker process for workers.mjs: a DAG engine over the Postgres store, a no-op tool.
// With BENCH_WARM_URL, it first drives BENCH_WARM_RUNS runs of BENCH_WARM_PLAN_STEPS steps there (its own
// queue, the same worker options), then closes that store and opens the round's: `ready` comes after.
import { defineTool, ToolRegistry } from '@stepwise/core';
import { chainPlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { createPostgresStore, createWorker, enqueue } from '@stepwise/store-postgres';

const profile = process.env.BENCH_PROFILE ? await import('./_profile-statements.mjs') : undefined;
// CPU spent starting and warming up (before `ready`): workers.mjs leaves it out of the round's CPU per step.
const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};
const { BENCH_URL: url, BENCH_SCHEMA: schema } = process.env;
const leaseTtlMs = Number(process.env.BENCH_TTL_MS ?? 30_000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const input = { type: 'object', properties: { i: { type: 'number' }, holdMs: { type: 'number' } } };
const tools = new ToolRegistry([
  defineTool({
    name: 'noop',
    description: 'returns its index',
    input,
    effect: 'read',
    idempotent: true,
    execute: async (args, context) => {
      // The takeover measurement holds the first attempt of one step; resumed attempts go on at once.
      if (args.holdMs && context.attempt === 1 && !process.env.BENCH_NO_HOLD) {
        await new Promise((resolve) => setTimeout(resolve, args.holdMs));
      }
      return { i: args.i ?? 0 };
    },
  }),
]);
const notify = process.env.BENCH_NOTIFY !== '0';

/** A store and a worker with the bench's options (`queue` for the warm-up's own). */
function open(connectionString, storeSchema, options = {}) {
  const store = createPostgresStore({
    connectionString,
    schema: storeSchema,
    maxConnections: Number(process.env.BENCH_POOL ?? concurrency + 2),
  });
  const engine = dagEngine({ tools, store, leaseTtlMs });
  const worker = createWorker({ store, engine, concurrency, leaseTtlMs, pollIntervalMs: 200, notify, ...options });
  return { store, worker };
}

async function warmUp() {
  const runs = Number(process.env.BENCH_WARM_RUNS ?? 0);
  if (!process.env.BENCH_WARM_URL || runs === 0) return;
  const queue = `warm_${process.pid}`;
  let ended = 0;
  let allEnded;
  const done = new Promise((resolve) => {
    allEnded = resolve;
  });
  const onRunEnd = () => {
    if (++ended === runs) allEnded();
  };
  const { store, worker } = open(process.env.BENCH_WARM_URL, 'bench', { queue, onRunEnd });
  const plan = chainPlan(Number(process.env.BENCH_WARM_PLAN_STEPS), 'noop');
  for (let index = 0; index < runs; index++) await enqueue(plan, { store, queue });
  await done;
  await worker.stop();
  await store.close();
  profile?.resetProfile();
}

await warmUp();
const { store, worker } = open(url, schema);
await store.ready;
process.stdout.write(`${JSON.stringify({ ready: worker.owner, cpuMs: cpuMs() })}\n`);
process.on('SIGTERM', async () => {
  await worker.stop();
  await store.close();
  await profile?.reportProfile();
  process.exit(0);
});

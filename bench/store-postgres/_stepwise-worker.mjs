// One Stepwise worker process for workers.mjs: a DAG engine over the Postgres store, a no-op tool.
import { defineTool, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { createPostgresStore, createWorker } from '@stepwise/store-postgres';

const profile = process.env.BENCH_PROFILE ? await import('./_profile-statements.mjs') : undefined;
// CPU spent starting (before `ready`): workers.mjs leaves it out of the round's CPU per step.
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
const store = createPostgresStore({
  connectionString: url,
  schema,
  maxConnections: Number(process.env.BENCH_POOL ?? concurrency + 2),
});
const engine = dagEngine({ tools, store, leaseTtlMs });
const notify = process.env.BENCH_NOTIFY !== '0';
const worker = createWorker({ store, engine, concurrency, leaseTtlMs, pollIntervalMs: 200, notify });
await store.ready;
process.stdout.write(`${JSON.stringify({ ready: worker.owner, cpuMs: cpuMs() })}\n`);
process.on('SIGTERM', async () => {
  await worker.stop();
  await store.close();
  await profile?.reportProfile();
  process.exit(0);
});

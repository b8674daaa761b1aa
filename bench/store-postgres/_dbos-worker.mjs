// One DBOS Transact worker process for workers.mjs: the same chain of no-op steps as a workflow on a queue.
// With BENCH_WARM_URL, it first drives BENCH_WARM_RUNS workflows of BENCH_WARM_PLAN_STEPS steps there (its own
// queue, listening to no other), shuts DBOS down and launches it on the round's database: `ready` comes after.
// The bench migrates both databases first (runMigrations: false here), so its processes start together.
import { DBOS } from '@dbos-inc/dbos-sdk';

// CPU spent starting and warming up (before `ready`): workers.mjs leaves it out of the round's CPU per step.
const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};
const { BENCH_URL: url } = process.env;
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const config = {
  name: 'stepwise-bench',
  applicationVersion: 'bench',
  executorID: `bench-${process.pid}`,
  logLevel: 'error',
  systemDatabasePoolSize: concurrency + 2,
  runMigrations: false,
};
async function chainWorkflow(steps) {
  let last = 0;
  for (let index = 0; index < steps; index++) last = await DBOS.runStep(async () => index, { name: `s${index}` });
  return last;
}
let chain = DBOS.registerWorkflow(chainWorkflow, { name: 'chain' });

async function warmUp() {
  const runs = Number(process.env.BENCH_WARM_RUNS ?? 0);
  if (!process.env.BENCH_WARM_URL || runs === 0) return;
  const queue = `warm_${process.pid}`;
  DBOS.setConfig({ ...config, systemDatabaseUrl: process.env.BENCH_WARM_URL, listenQueues: [queue] });
  await DBOS.launch();
  await DBOS.registerQueue(queue, { workerConcurrency: concurrency });
  const handles = [];
  for (let index = 0; index < runs; index++)
    handles.push(await DBOS.startWorkflow(chain, { queueName: queue })(Number(process.env.BENCH_WARM_PLAN_STEPS)));
  for (const handle of handles) await handle.getResult();
  // The warm-up's queue is not the round's: clear it, register the workflow again.
  await DBOS.shutdown({ deregister: true });
  chain = DBOS.registerWorkflow(chainWorkflow, { name: 'chain' });
}

await warmUp();
DBOS.setConfig({ ...config, systemDatabaseUrl: url });
await DBOS.launch();
await DBOS.registerQueue('bench', { workerConcurrency: concurrency });
process.stdout.write(`${JSON.stringify({ ready: `bench-${process.pid}`, cpuMs: cpuMs() })}\n`);
process.on('SIGTERM', async () => {
  await DBOS.shutdown();
  process.exit(0);
});

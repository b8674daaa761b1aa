// One DBOS Transact worker process for workers.mjs: the same chain of no-op steps as a workflow on a queue.
import { DBOS } from '@dbos-inc/dbos-sdk';

// CPU spent starting (before `ready`): workers.mjs leaves it out of the round's CPU per step.
const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};
const { BENCH_URL: url } = process.env;
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
DBOS.setConfig({
  name: 'stepwise-bench',
  systemDatabaseUrl: url,
  applicationVersion: 'bench',
  executorID: `bench-${process.pid}`,
  logLevel: 'error',
  systemDatabasePoolSize: concurrency + 2,
});
async function chainWorkflow(steps) {
  let last = 0;
  for (let index = 0; index < steps; index++) last = await DBOS.runStep(async () => index, { name: `s${index}` });
  return last;
}
DBOS.registerWorkflow(chainWorkflow, { name: 'chain' });
await DBOS.launch();
await DBOS.registerQueue('bench', { workerConcurrency: concurrency });
process.stdout.write(`${JSON.stringify({ ready: `bench-${process.pid}`, cpuMs: cpuMs() })}\n`);
process.on('SIGTERM', async () => {
  await DBOS.shutdown();
  process.exit(0);
});

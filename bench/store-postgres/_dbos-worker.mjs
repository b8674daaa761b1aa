// One DBOS Transact worker process for workers.mjs: the same chain of no-op steps as a workflow on a queue.
import { DBOS } from '@dbos-inc/dbos-sdk';

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
process.stdout.write(`${JSON.stringify({ ready: `bench-${process.pid}` })}\n`);
process.on('SIGTERM', async () => {
  await DBOS.shutdown();
  process.exit(0);
});

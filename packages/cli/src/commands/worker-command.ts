import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { type OptionSpecs, positiveInteger } from '../command-arguments.js';
import {
  createRunner,
  isPostgresStoreConfig,
  loadPostgresStore,
  type PostgresStoreConfig,
  type Runner,
  type RunnerOptions,
} from '../create-runner.js';
import { ExitCodes } from '../exit-codes.js';
import { runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { type CommandContext, commandJournalKey, loadCommandConfig, print, printError } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  config: { type: 'string', short: 'c' },
  workspace: { type: 'string', short: 'w' },
  queue: { type: 'string', short: 'q' },
  concurrency: { type: 'string' },
  'queue-limit': { type: 'string' },
  'tool-limits': { type: 'string' },
  'takeover-slots': { type: 'string' },
  'no-notify': { type: 'boolean' },
} as const satisfies OptionSpecs;

/** `run_command=4,file_write=2` → `{ run_command: 4, file_write: 2 }`. */
function parseToolLimits(value: string | boolean | undefined): Record<string, number> | undefined {
  if (typeof value !== 'string') return undefined;
  const limits: Record<string, number> = {};
  for (const entry of value.split(',')) {
    const match = /^\s*([\w.:-]+)\s*=\s*(\d+)\s*$/.exec(entry);
    if (!match) {
      throw new StepwiseError(
        ErrorCodes.INPUT_INVALID,
        `worker: --tool-limits takes tool=N[,tool=N…] (got "${entry}")`,
        {
          location: '--tool-limits',
        },
      );
    }
    limits[match[1] as string] = Number(match[2]);
  }
  return limits;
}

/** `--takeover-slots N`: 0 or more. */
function nonNegativeInteger(value: string | boolean | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (value === '0') return 0;
  return positiveInteger('worker', 'takeover-slots', value);
}

/** E601 unless the configuration names a Postgres store: the queue lives there. */
export function requirePostgresStore(
  command: string,
  store: RunnerOptions['store'],
): asserts store is PostgresStoreConfig {
  if (!isPostgresStoreConfig(store)) {
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `stepwise ${command} needs a shared store: set "store": { "kind": "postgres", "url": "postgres://…" } in the configuration`,
      { location: '/store' },
    );
  }
}

/** Waits for SIGINT or SIGTERM. */
export function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export const workerCommand: CommandDefinition = {
  name: 'worker',
  summary: 'claim and run queued plans from the Postgres store until stopped',
  positionals: { min: 0, max: 0, names: '' },
  options,
  help: `Usage: stepwise worker [--queue Q] [--concurrency N] [--queue-limit N] [--tool-limits tool=N,…] [--takeover-slots N] [--no-notify]

Runs plans enqueued in the Postgres store (configuration: "store": { "kind": "postgres", "url": "…" })
with the configured engine and tools. Start one on every machine; a worker that dies has its runs
taken over by the others once its lease time-to-live ("leaseTtlMs") passes. Stops on SIGINT/SIGTERM
after the runs in flight end.

Options:
  -q, --queue Q           the queue to take runs from (default "default")
      --concurrency N     runs at once in this worker (default 4)
      --queue-limit N     runs of the queue at once across all workers (give every worker the same)
      --tool-limits T=N   calls of tool T at once across all workers, e.g. run_command=4
      --takeover-slots N  runs of dead workers a full worker takes over beyond --concurrency
                          (default: its concurrency; 0: only when a slot frees)
      --no-notify         poll the queue instead of listening for news of it (LISTEN/NOTIFY),
                          e.g. behind a connection pooler in transaction mode, which drops LISTEN
  -c, --config F          the configuration file
  -w, --workspace W       the workspace the tools work in

Examples:
  stepwise worker
  stepwise worker --queue builds --concurrency 8 --tool-limits run_command=4`,
  async run(context: CommandContext, { values }) {
    const concurrency = positiveInteger('worker', 'concurrency', values.concurrency) ?? 4;
    const queueLimit = positiveInteger('worker', 'queue-limit', values['queue-limit']);
    const toolLimits = parseToolLimits(values['tool-limits']);
    const takeoverSlots = nonNegativeInteger(values['takeover-slots']);
    const loaded = await loadCommandConfig(context, values.config as string | undefined);
    const runnerOptions = runnerOptionsFromConfig(loaded, {
      cwd: context.io.cwd,
      ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
    });
    requirePostgresStore('worker', runnerOptions.store);
    const { createWorker, limitTools } = await loadPostgresStore();
    const journalKey = await commandJournalKey(context);
    const runners: Runner[] = [await createRunner({ ...runnerOptions, journalKey })];
    try {
      const base = runners[0] as Runner;
      const store = base.store as import('@stepwise/store-postgres').PostgresStore;
      // Tool limits wrap the registry the engine calls, so the engine is built again on the limited tools.
      const runner = toolLimits
        ? await createRunner({
            ...runnerOptions,
            journalKey,
            plugins: [],
            store,
            tools: limitTools(base.tools, { connection: store.connection, limits: toolLimits }),
          })
        : base;
      if (runner !== base) runners.push(runner);
      const worker = createWorker({
        store,
        engine: runner.engine,
        concurrency,
        ...(typeof values.queue === 'string' ? { queue: values.queue } : {}),
        ...(queueLimit === undefined ? {} : { queueLimit }),
        ...(takeoverSlots === undefined ? {} : { takeoverSlots }),
        ...(values['no-notify'] === true ? { notify: false } : {}),
        ...(runnerOptions.leaseTtlMs === undefined ? {} : { leaseTtlMs: runnerOptions.leaseTtlMs }),
        onRunEnd: (runId, status) => print(context, JSON.stringify({ runId, status })),
        onError: (error) => printError(context, `${error.code} ${error.message}`),
      });
      print(context, JSON.stringify({ worker: worker.owner, queue: values.queue ?? 'default', concurrency }));
      const signal = await untilSignal();
      printError(context, `worker: ${signal}, finishing ${worker.active} run(s) in flight`);
      await worker.stop();
      return ExitCodes.COMPLETED;
    } finally {
      for (const runner of runners.reverse()) await runner.close().catch(() => undefined);
    }
  },
};

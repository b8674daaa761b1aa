import { ErrorCodes, type ResumeOptions, type RunHandle, StepwiseError } from '@stepwise/core';
import { serveDashboard } from '@stepwise/dashboard';
import { type OptionSpecs, positiveInteger, STORE_OPTIONS } from '../command-arguments.js';
import { createRunner, type EngineName, type Runner } from '../create-runner.js';
import { ExitCodes } from '../exit-codes.js';
import { runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { type CommandContext, openCommandStore, print, printError } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';
import { untilSignal } from './worker-command.js';

const options = {
  ...STORE_OPTIONS,
  port: { type: 'string', short: 'p' },
  host: { type: 'string' },
  'read-only': { type: 'boolean' },
} as const satisfies OptionSpecs;

const ENGINES: readonly EngineName[] = ['sequential', 'dag', 'agentic'];

export const uiCommand: CommandDefinition = {
  name: 'ui',
  summary: 'serve the live dashboard of the journal on 127.0.0.1',
  positionals: { min: 0, max: 0, names: '' },
  options,
  help: `Usage: stepwise ui [--port N] [--host H] [--read-only] [--config F] [--workspace DIR] [--db F]

Serves the dashboard of the configuration's journal (SQLite, or the configured Postgres store)
until stopped (Ctrl-C): the runs list, and each run's plan graph, timeline and step details, kept
live as the journal grows, whichever process writes it. From a run's page you can approve, deny
or answer what a waiting run asks, continue a failed run with retry or skip, and approve a strict
run's revised plan; the run then goes on in this process, with the configured engines and tools
(new approvals wait for the page). A run started here can be cancelled from its page.

It binds to 127.0.0.1 and has no login: anyone who can reach the port can act on the runs.

Options:
  -p, --port N       the port (default 4848; 0: any free port)
      --host H       the address to bind (default 127.0.0.1)
      --read-only    show runs, allow no action
      --db F         the SQLite journal (default: the configuration's)

Examples:
  stepwise ui
  stepwise ui --port 8080 --db .stepwise/stepwise.db`,
  async run(context: CommandContext, { values }) {
    const port = values.port === '0' ? 0 : (positiveInteger('ui', 'port', values.port) ?? 4848);
    const { store, loaded, journalKey } = await openCommandStore(context, values);
    const runners = new Map<string, Promise<Runner>>();
    // Each run goes on with the engine that started it; answers to new approvals wait for the page.
    const runnerFor = (engine: EngineName) => {
      let runner = runners.get(engine);
      if (!runner) {
        const overrides = {
          cwd: context.io.cwd,
          engine,
          nonInteractive: 'pause' as const,
          ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
        };
        runner = createRunner({ ...runnerOptionsFromConfig(loaded, overrides), store, journalKey });
        runners.set(engine, runner);
      }
      return runner;
    };
    const resume = async (runId: string, resumeOptions: ResumeOptions): Promise<RunHandle> => {
      const engine = (await store.getRun(runId))?.engine ?? '';
      if (!(ENGINES as readonly string[]).includes(engine)) {
        throw new StepwiseError(
          ErrorCodes.CONFIG_INVALID,
          `run ${runId} was started by an unknown engine "${engine}"`,
          {
            location: runId,
          },
        );
      }
      return (await runnerFor(engine as EngineName)).resume(runId, resumeOptions);
    };
    try {
      const server = await serveDashboard({
        store,
        resume,
        journalKey,
        port,
        hostname: typeof values.host === 'string' ? values.host : '127.0.0.1',
        readOnly: values['read-only'] === true,
        actor: () => context.io.env.USER ?? 'stepwise ui',
      });
      print(context, `Stepwise dashboard: ${server.url}`);
      const signal = await untilSignal();
      printError(context, `stepwise ui: ${signal}, stopping`);
      await server.close();
      return ExitCodes.COMPLETED;
    } finally {
      const opened = await Promise.allSettled(runners.values());
      for (const runner of opened) if (runner.status === 'fulfilled') await runner.value.close().catch(() => undefined);
      // A runner closes the store it was given too: closing twice is harmless.
      await store.close().catch(() => undefined);
    }
  },
};

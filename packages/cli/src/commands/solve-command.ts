import path from 'node:path';
import type { SolveEvent, SolveHostOptions, SolveModel, SolveResult, ValidationCommand } from '@stepwise/code-agent';
import { ErrorCodes, type Plan, type RunStore, StepwiseError } from '@stepwise/core';
import { type OptionSpecs, positiveInteger, STORE_OPTIONS, UsageError } from '../command-arguments.js';
import { createModel, openSqliteStore } from '../create-runner.js';
import { ExitCodes } from '../exit-codes.js';
import type { LoadedConfig } from '../load-config.js';
import { readJsonFile } from '../read-plan-file.js';
import { runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { loadCodeAgent } from '../solve.js';
import { splitCommand } from '../split-command.js';
import { type CommandContext, commandJournalKey, loadCommandConfig, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  ...STORE_OPTIONS,
  validate: { type: 'string' },
  plan: { type: 'string', short: 'p' },
  'max-attempts': { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

/** `@stepwise/code-agent`, loaded when a command needs it. */
export type CodeAgent = Awaited<ReturnType<typeof loadCodeAgent>>;

/**
 * The engine name a code-agent run journals (`SOLVE_ENGINE` of `@stepwise/code-agent`): read here to
 * send `stepwise resume` of such a run to the code agent without loading the package for other runs.
 */
export const CODE_AGENT_ENGINE = 'solve';

/** The journal may live in the workspace: its files must never be rolled back under the store. */
function checkpointExclude(
  codeAgent: CodeAgent,
  workspace: string,
  database: string,
  configured: readonly string[] | undefined,
): string[] {
  const base = [...(configured ?? codeAgent.DEFAULT_CHECKPOINT_EXCLUDE)];
  const relative = path.relative(workspace, database);
  if (relative.startsWith('..') || path.isAbsolute(relative)) return base;
  const name = path.basename(database);
  return [...base, name, `${name}-wal`, `${name}-shm`, `${name}-journal`];
}

export function describeProgress(event: SolveEvent): string | undefined {
  if (event.type === 'plan-ready') return `plan: ${event.plan.steps.map((step) => step.id).join(', ')}`;
  if (event.type === 'attempt-start') return undefined;
  if (event.type === 'plan-revised') {
    return `plan revised (revision ${event.revision}): ${event.plan.steps.map((step) => step.id).join(', ')}`;
  }
  const { attempt } = event;
  const changed = [...attempt.changes.modified, ...attempt.changes.created, ...attempt.changes.deleted];
  const restored = attempt.rollback ? [...attempt.rollback.restored, ...attempt.rollback.removed] : [];
  return [
    `${attempt.stepId} attempt ${attempt.attempt}: step ${attempt.status}`,
    `changed ${changed.length > 0 ? changed.join(', ') : 'nothing'}`,
    ...attempt.validations.flatMap((validation) => {
      const failing = validation.failingTests.map((test) => test.name);
      const verdict = validation.passed ? 'passed' : `failed (exit ${validation.exitCode ?? 'none'})`;
      return [
        `${validation.command.join(' ')} ${verdict}`,
        ...(failing.length > 0 ? [`failing: ${failing.join('; ')}`] : []),
      ];
    }),
    ...(attempt.rolledBack ? [`rolled back${restored.length > 0 ? ` (restored ${restored.join(', ')})` : ''}`] : []),
  ].join('; ');
}

/** The validation: `--validate` (split like a shell would, or a JSON argv), else the configuration's `validation`. */
export function validationOf(codeAgent: CodeAgent, flag: unknown, loaded: LoadedConfig): ValidationCommand[] {
  if (typeof flag === 'string' && flag.trim() !== '')
    return [{ name: 'test', command: splitCommand(flag, '--validate') }];
  if (loaded.config.validation) return codeAgent.validationCommands(loaded.config.validation, '/validation');
  throw new UsageError(
    'stepwise solve: name the validation with --validate "<command>" or a "validation" section in the configuration (see stepwise solve --help)',
  );
}

/** The configuration's model: E601 when there is none. */
export function solveModelSettings<T extends { readonly model?: unknown }>(settings: T): NonNullable<T['model']> {
  if (!settings.model) {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'solve needs a model: set "model" to { baseURL, model }', {
      location: '/model',
    });
  }
  return settings.model as NonNullable<T['model']>;
}

/** What `solve`, `plan` and resuming a code-agent run take from the configuration and the flags. */
export async function solveHost(
  codeAgent: CodeAgent,
  context: CommandContext,
  values: Record<string, unknown>,
  loaded: LoadedConfig,
  opened?: RunStore,
) {
  const settings = runnerOptionsFromConfig(loaded, {
    cwd: context.io.cwd,
    ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
    ...(typeof values.db === 'string' ? { database: values.db } : {}),
  });
  const model = (await createModel(solveModelSettings(settings), codeAgent.openAICompatible)) as SolveModel;
  const store = opened ?? (await openSqliteStore(settings.database));
  const { config } = loaded;
  const host: SolveHostOptions & { readonly store: typeof store } = {
    workspace: settings.workspace,
    model,
    store,
    journalKey: await commandJournalKey(context),
    protectedPaths: settings.protectedPaths,
    ...(settings.commands?.allow ? { allowCommands: settings.commands.allow } : {}),
    ...(config.leaseTtlMs === undefined ? {} : { leaseTtlMs: config.leaseTtlMs }),
    ...(config.solve?.maxAttempts === undefined ? {} : { maxAttempts: config.solve.maxAttempts }),
  };
  return {
    host,
    database: settings.database,
    exclude: checkpointExclude(codeAgent, settings.workspace, settings.database, config.solve?.checkpointExclude),
  };
}

/** Prints a code-agent run's result; the exit code says how it ended. */
export function reportSolve(context: CommandContext, result: SolveResult, database: string, json: boolean): number {
  if (json) print(context, JSON.stringify(result));
  else print(context, `${result.summary}\nrun: ${result.runId} (stepwise show ${result.runId})\njournal: ${database}`);
  return result.status === 'solved' ? ExitCodes.COMPLETED : ExitCodes.STEP_FAILED;
}

export const solveCommand: CommandDefinition = {
  name: 'solve',
  summary: 'plan and carry out a coding task, validating, rolling back and retrying',
  positionals: { min: 1, max: 1, names: '<task>' },
  options,
  help: `Usage: stepwise solve "<task>" [--validate "<command>"] [options]

Plans the task with the configured model (the run's first step), carries out each planned step with
the file and command tools, runs the validation after every attempt, rolls a failed attempt's
changes back (ignored files too; not node_modules or .stepwise) and retries it with the failing tests
in the prompt. After each step an adjustment is journaled; a step that cannot be fixed leaves the
steps that do not depend on it going (the run ends partial). It is one run on the scheduler: after
a crash, stepwise resume <run> validates the attempt that was in flight and goes on.

The validation is the configuration's "validation" section (named argv commands, mandatory unless
"optional"), or --validate. The model is the configuration's "model" (an OpenAI-compatible endpoint).

Options:
  --validate CMD       the validation command, split like a shell would (quotes kept, no shell runs),
                       or a JSON argv such as '["npm","test"]'; replaces the configuration's
  -p, --plan FILE      carry out this plan (e.g. from stepwise plan) instead of planning
  --max-attempts N     attempts per step (default: the configuration's solve.maxAttempts, else 3)
  -w, --workspace DIR  the project (default: the configuration's workspace, else the current directory)
  --db FILE            the journal (default .stepwise/stepwise.db in the workspace)
  -c, --config FILE    the configuration file
  --json               print the result as JSON instead of progress lines

Examples:
  stepwise solve "Fix the failing discount tests" --validate "npm test"
  stepwise plan "Add input validation" --out plan.json && stepwise solve "Add input validation" --plan plan.json
  stepwise solve "Make pytest pass" --validate "python -m pytest -q -k 'not slow'" --max-attempts 5`,
  async run(context: CommandContext, { values, positionals }) {
    const maxAttempts = positiveInteger('solve', 'max-attempts', values['max-attempts']);
    // Before the configuration: without the package, no model or configuration would help.
    const codeAgent = await loadCodeAgent('stepwise solve', 'solve');
    const loaded = await loadCommandConfig(context, values.config as string | undefined);
    const validation = validationOf(codeAgent, values.validate, loaded);
    const plan =
      typeof values.plan === 'string'
        ? ((await readJsonFile(values.plan, 'plan', context.io.cwd)).value as Plan)
        : undefined;
    const { host, database, exclude } = await solveHost(codeAgent, context, values, loaded);
    try {
      const json = values.json === true;
      const result = await codeAgent.solve({
        ...host,
        task: positionals[0] as string,
        validate: Object.fromEntries(validation.map(({ name, ...command }) => [name, command])),
        ...(plan ? { plan } : {}),
        ...(maxAttempts === undefined ? {} : { maxAttempts }),
        ...(loaded.config.solve?.maxReplans === undefined ? {} : { maxReplans: loaded.config.solve.maxReplans }),
        ...(loaded.config.solve?.adjust ? { adjust: loaded.config.solve.adjust } : {}),
        checkpoint: { exclude },
        onProgress(event) {
          const line = json ? undefined : describeProgress(event);
          if (line) print(context, line);
        },
      });
      return reportSolve(context, result, database, json);
    } finally {
      await host.store.close();
    }
  },
};

/**
 * `stepwise resume` of a code-agent run: the same model and workspace from the configuration, the
 * task, validation and checkpoints from the run's journal. Progress lines as `solve` prints them.
 */
export async function resumeCodeAgentRun(
  context: CommandContext,
  values: Record<string, unknown>,
  loaded: LoadedConfig,
  store: RunStore,
  resume: { readonly runId: string; readonly retry?: readonly string[]; readonly skip?: readonly string[] },
): Promise<number> {
  const codeAgent = await loadCodeAgent('stepwise resume', 'solve');
  const { host, database } = await solveHost(codeAgent, context, values, loaded, store);
  const json = values.json === true;
  const result = await codeAgent.resumeSolve({
    ...host,
    ...resume,
    ...(typeof values.by === 'string' ? { by: values.by } : {}),
    ...(typeof values.reason === 'string' ? { reason: values.reason } : {}),
    onProgress(event) {
      const line = json ? undefined : describeProgress(event);
      if (line) print(context, line);
    },
  });
  return reportSolve(context, result, database, json);
}

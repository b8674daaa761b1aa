import path from 'node:path';
import { ErrorCodes, type Plan, StepwiseError } from '@stepwise/core';
import { type OptionSpecs, positiveInteger, STORE_OPTIONS, UsageError } from '../command-arguments.js';
import { createModel, loadAgenticEngine, openSqliteStore } from '../create-runner.js';
import { ExitCodes } from '../exit-codes.js';
import { readJsonFile } from '../read-plan-file.js';
import { runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { DEFAULT_CHECKPOINT_EXCLUDE, type SolveEvent, type SolveModel, solve } from '../solve/solve.js';
import { type CommandContext, commandJournalKey, loadCommandConfig, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  ...STORE_OPTIONS,
  validate: { type: 'string' },
  plan: { type: 'string', short: 'p' },
  'max-attempts': { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

/** The journal may live in the workspace: its files must never be rolled back under the store. */
function checkpointExclude(workspace: string, database: string): string[] {
  const relative = path.relative(workspace, database);
  if (relative.startsWith('..') || path.isAbsolute(relative)) return [...DEFAULT_CHECKPOINT_EXCLUDE];
  const name = path.basename(database);
  return [...DEFAULT_CHECKPOINT_EXCLUDE, name, `${name}-wal`, `${name}-shm`, `${name}-journal`];
}

function describeProgress(event: SolveEvent): string | undefined {
  if (event.type === 'plan-ready') return `plan: ${event.plan.steps.map((step) => step.id).join(', ')}`;
  if (event.type === 'attempt-start') return undefined;
  if (event.type === 'plan-revised') {
    return `plan revised (revision ${event.revision.revision}): ${event.revision.plan.steps.map((step) => step.id).join(', ')}`;
  }
  const { attempt } = event;
  const { validation } = attempt;
  const failing = validation.failingTests.map((test) => test.name);
  const changed = [...attempt.changes.modified, ...attempt.changes.created, ...attempt.changes.deleted];
  return [
    `${attempt.stepId} attempt ${attempt.attempt}: step ${attempt.status}`,
    `changed ${changed.length > 0 ? changed.join(', ') : 'nothing'}`,
    `${validation.command.join(' ')} ${validation.passed ? 'passed' : `failed (exit ${validation.exitCode ?? 'none'})`}`,
    ...(failing.length > 0 ? [`failing: ${failing.join('; ')}`] : []),
    ...(attempt.rolledBack ? ['rolled back'] : []),
  ].join('; ');
}

export const solveCommand: CommandDefinition = {
  name: 'solve',
  summary: 'plan and carry out a coding task, validating, rolling back and retrying',
  positionals: { min: 1, max: 1, names: '<task>' },
  options,
  help: `Usage: stepwise solve "<task>" --validate "<command>" [options]

Plans the task with the configured model, carries out each step with the file and command tools,
runs the validation command after every attempt, rolls a failed attempt's changes back and retries
it with the failing tests in the prompt. Every run is journaled (see stepwise runs / show / report).
The model is the configuration's "model" (an OpenAI-compatible endpoint).

Options:
  --validate CMD       the validation command, split on spaces (no shell), e.g. "npm test" (required)
  -p, --plan FILE      carry out this plan instead of asking the model for one
  --max-attempts N     attempts per step (default 3)
  -w, --workspace DIR  the project (default: the configuration's workspace, else the current directory)
  --db FILE            the journal (default .stepwise/stepwise.db in the workspace)
  -c, --config FILE    the configuration file
  --json               print the result as JSON instead of progress lines

Examples:
  stepwise solve "Fix the failing discount tests" --validate "npm test"
  stepwise solve "Make pytest pass" --validate "python -m pytest -q" --max-attempts 5`,
  async run(context: CommandContext, { values, positionals }) {
    if (typeof values.validate !== 'string' || values.validate.trim() === '') {
      throw new UsageError('stepwise solve: --validate "<command>" is required (see stepwise solve --help)');
    }
    const maxAttempts = positiveInteger('solve', 'max-attempts', values['max-attempts']);
    // Before the configuration: without the package, no model or configuration would help.
    await loadAgenticEngine('stepwise solve', 'solve');
    const loaded = await loadCommandConfig(context, values.config as string | undefined);
    const settings = runnerOptionsFromConfig(loaded, {
      cwd: context.io.cwd,
      ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
      ...(typeof values.db === 'string' ? { database: values.db } : {}),
    });
    if (!settings.model) {
      throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'solve needs a model: set "model" to { baseURL, model }', {
        location: '/model',
      });
    }
    const model = (await createModel(settings.model)) as SolveModel;
    const plan =
      typeof values.plan === 'string'
        ? ((await readJsonFile(values.plan, 'plan', context.io.cwd)).value as Plan)
        : undefined;
    const store = await openSqliteStore(settings.database);
    const journalKey = await commandJournalKey(context);
    try {
      const json = values.json === true;
      const result = await solve({
        task: positionals[0] as string,
        workspace: settings.workspace,
        validate: values.validate.trim().split(/\s+/),
        model,
        store,
        journalKey,
        ...(plan ? { plan } : {}),
        ...(maxAttempts === undefined ? {} : { maxAttempts }),
        ...(settings.commands?.allow ? { allowCommands: settings.commands.allow } : {}),
        checkpoint: { exclude: checkpointExclude(settings.workspace, settings.database) },
        protectedPaths: settings.protectedPaths,
        onProgress(event) {
          const line = json ? undefined : describeProgress(event);
          if (line) print(context, line);
        },
      });
      if (json) print(context, JSON.stringify(result));
      else
        print(
          context,
          `${result.summary}\nrun: ${result.runId} (stepwise show ${result.runId})\njournal: ${settings.database}`,
        );
      return result.status === 'solved' ? ExitCodes.COMPLETED : ExitCodes.STEP_FAILED;
    } finally {
      await store.close();
    }
  },
};

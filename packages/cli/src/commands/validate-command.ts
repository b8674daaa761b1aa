import { ErrorCodes, type PlanValidation, StepwiseError, validatePlan } from '@stepwise/core';
import { choice, type OptionSpecs, STORE_OPTIONS } from '../command-arguments.js';
import { createRunner, type EngineName, type RunnerOptions, runnerRedactor } from '../create-runner.js';
import { ExitCodes } from '../exit-codes.js';
import { formatPlanProblems, locatePlanProblems } from '../format-plan-problems.js';
import { readJsonFile } from '../read-plan-file.js';
import { runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { type CommandContext, commandRedactor, loadCommandConfig, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  ...STORE_OPTIONS,
  engine: { type: 'string', short: 'e' },
  json: { type: 'boolean' },
  'no-tools': { type: 'boolean' },
} as const satisfies OptionSpecs;

/**
 * What `stepwise run` refuses before a step runs that validation alone would not see: the
 * model's key variable unset, an engine package not installed, the agentic engine without a
 * model (E601 at /model… or /engine).
 */
function isNotReady(error: unknown): error is StepwiseError {
  return (
    StepwiseError.isInstance(error) &&
    error.code === ErrorCodes.CONFIG_INVALID &&
    /^\/(model|engine)(\/|$)/.test(error.location ?? '')
  );
}

function describeNotReady(error: StepwiseError) {
  const missingPackage = error.details?.package;
  return {
    code: error.code,
    location: error.location,
    message: error.message,
    ...(typeof missingPackage === 'string' ? { package: missingPackage } : {}),
  };
}

/**
 * Validates the plan with the runner `stepwise run` would build (the engine, the model, the tools;
 * a memory store stands in for the journal). When that runner cannot be built here (see
 * isNotReady), the plan is still checked, with the tools and the engine's rules, and the reason
 * comes back as `notReady`.
 */
async function validateAsRunWould(
  plan: unknown,
  options: RunnerOptions & { readonly engine: EngineName },
): Promise<{ validation: PlanValidation; notReady: StepwiseError | undefined }> {
  let notReady: StepwiseError | undefined;
  try {
    const runner = await createRunner({ ...options, store: 'memory' });
    try {
      return { validation: runner.validate(plan), notReady };
    } finally {
      await runner.close();
    }
  } catch (error) {
    if (!isNotReady(error)) throw error;
    notReady = error;
  }
  // Without a model and on the dag engine (always installed), for the tools only.
  const { model, agentic: _agentic, ...toolOptions } = options;
  const standIn = await createRunner({ ...toolOptions, engine: 'dag', store: 'memory' });
  try {
    const goalSteps = model === undefined ? {} : { goalSteps: true };
    const redactor = runnerRedactor(options);
    return {
      validation: validatePlan(plan, { tools: standIn.tools, engine: options.engine, redactor, ...goalSteps }),
      notReady,
    };
  } finally {
    await standIn.close();
  }
}

export const validateCommand: CommandDefinition = {
  name: 'validate',
  summary: 'check a plan and print every problem',
  positionals: { min: 1, max: 1, names: '<plan.json>' },
  options,
  help: `Usage: stepwise validate <plan.json> [--engine sequential|dag|agentic] [--config F] [--json] [--no-tools]

Checks the plan's shape, ids, dependencies (cycles are named), tools (against the whitelist the
configuration builds: tools-node plus plugins) and each step's arguments. Prints every problem as
"file:line:column code path message", one per line, and exits 2 if there is any. The plan (and a
stepwise.config.json) may have comments and trailing commas (JSONC).

It also builds what stepwise run would build, so a configuration that cannot run here is not
passed with a bare ✓: when the model's API key variable is unset, an engine package is not
installed or the agentic engine has no model, it prints "!" instead of "✓", names what is missing
on stderr (E601) and exits 2, as stepwise run would.

Options:
  -e, --engine E     rules of this engine (default: the configuration's, else dag);
                     sequential also refuses argument references
  -c, --config F     configuration file (default: stepwise.config.* here or above)
      --no-tools     check the plan's structure only (no plugins, no engine, no model)
      --json         print { ok, engine, problems, order, ready, notReady } as JSON:
                     ok is the plan's verdict, ready whether stepwise run can start here

Examples:
  stepwise validate plan.json
  stepwise validate plan.json --engine sequential --json`,
  async run(context: CommandContext, { values, positionals }) {
    const file = positionals[0] as string;
    const planFile = await readJsonFile(file, 'plan', context.io.cwd);
    const loaded = await loadCommandConfig(context, values.config as string | undefined);
    const engine =
      choice<EngineName>('validate', 'engine', values.engine, ['sequential', 'dag', 'agentic']) ??
      loaded.config.engine ??
      'dag';
    const { validation, notReady } = values['no-tools']
      ? {
          validation: validatePlan(planFile.value, { engine, redactor: commandRedactor(context, loaded) }),
          notReady: undefined,
        }
      : await validateAsRunWould(
          planFile.value,
          runnerOptionsFromConfig(loaded, {
            engine,
            cwd: context.io.cwd,
            ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
          }),
        );
    const ok = validation.ok && !notReady;
    if (values.json) {
      print(
        context,
        JSON.stringify(
          {
            ok: validation.ok,
            engine,
            problems: locatePlanProblems(planFile, validation.problems),
            ...(validation.ok ? { order: validation.order } : {}),
            ...(values['no-tools'] ? {} : { ready: !notReady }),
            ...(notReady ? { notReady: describeNotReady(notReady) } : {}),
          },
          null,
          2,
        ),
      );
    } else if (validation.ok) {
      const { palette } = context;
      const steps = validation.plan.steps.length;
      print(
        context,
        `${notReady ? palette.yellow('!') : palette.green('✓')} ${file} is a valid plan for the ${engine} engine: ${steps} step${steps === 1 ? '' : 's'} (${validation.order.join(' → ')})`,
      );
    } else {
      for (const line of formatPlanProblems(planFile, validation.problems)) print(context, line);
      context.io.stderr.write(
        `${file}: ${validation.problems.length} problem${validation.problems.length === 1 ? '' : 's'}\n`,
      );
    }
    if (notReady && !values.json) {
      context.io.stderr.write(
        `stepwise validate: stepwise run cannot start with this configuration here: ${notReady.code} ${notReady.message} (at ${notReady.location})\n`,
      );
    }
    return ok ? ExitCodes.COMPLETED : ExitCodes.INVALID_INPUT;
  },
};

import { validatePlan } from '@stepwise/core';
import { choice, type OptionSpecs, STORE_OPTIONS } from '../command-arguments.js';
import { createRunner, type EngineName } from '../create-runner.js';
import { ExitCodes } from '../exit-codes.js';
import { formatPlanProblems, locatePlanProblems } from '../format-plan-problems.js';
import { readJsonFile } from '../read-plan-file.js';
import { runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { type CommandContext, loadCommandConfig, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  ...STORE_OPTIONS,
  engine: { type: 'string', short: 'e' },
  json: { type: 'boolean' },
  'no-tools': { type: 'boolean' },
} as const satisfies OptionSpecs;

export const validateCommand: CommandDefinition = {
  name: 'validate',
  summary: 'check a plan and print every problem',
  positionals: { min: 1, max: 1, names: '<plan.json>' },
  options,
  help: `Usage: stepwise validate <plan.json> [--engine sequential|dag|agentic] [--config F] [--json] [--no-tools]

Checks the plan's shape, ids, dependencies (cycles are named), tools (against the whitelist the
configuration builds: tools-node plus plugins) and each step's arguments. Prints every problem as
"file:line:column code path message", one per line, and exits 2 if there is any.

Options:
  -e, --engine E     rules of this engine (default: the configuration's, else dag);
                     sequential also refuses argument references
  -c, --config F     configuration file (default: stepwise.config.* here or above)
      --no-tools     check the plan's structure only (no plugins are loaded)
      --json         print { ok, problems, order } as JSON

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
    let validation: ReturnType<typeof validatePlan>;
    if (values['no-tools']) {
      validation = validatePlan(planFile.value, { engine });
    } else {
      // Validation needs no model: its endpoint and key (perhaps unset here) are left out.
      const {
        model: _model,
        agentic: _agentic,
        ...runnerOptions
      } = runnerOptionsFromConfig(loaded, {
        engine,
        cwd: context.io.cwd,
        ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
      });
      // Validation needs the whitelist, not the journal, and no model: a memory store and the dag
      // rules stand in for engines whose dependencies are not configured.
      const runner = await createRunner({
        ...runnerOptions,
        engine: engine === 'agentic' ? 'dag' : engine,
        store: 'memory',
      });
      try {
        validation =
          engine === 'agentic'
            ? validatePlan(planFile.value, { tools: runner.tools, engine: 'agentic' })
            : runner.validate(planFile.value);
      } finally {
        await runner.close();
      }
    }
    if (values.json) {
      print(
        context,
        JSON.stringify(
          {
            ok: validation.ok,
            engine,
            problems: locatePlanProblems(planFile, validation.problems),
            ...(validation.ok ? { order: validation.order } : {}),
          },
          null,
          2,
        ),
      );
    } else if (validation.ok) {
      const { palette } = context;
      print(
        context,
        `${palette.green('✓')} ${file} is a valid plan for the ${engine} engine: ${validation.plan.steps.length} step${validation.plan.steps.length === 1 ? '' : 's'} (${validation.order.join(' → ')})`,
      );
    } else {
      for (const line of formatPlanProblems(planFile, validation.problems)) print(context, line);
      context.io.stderr.write(
        `${file}: ${validation.problems.length} problem${validation.problems.length === 1 ? '' : 's'}\n`,
      );
    }
    return validation.ok ? ExitCodes.COMPLETED : ExitCodes.INVALID_INPUT;
  },
};

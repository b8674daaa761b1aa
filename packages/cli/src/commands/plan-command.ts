import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type OptionSpecs, STORE_OPTIONS } from '../command-arguments.js';
import { createModel } from '../create-runner.js';
import { ExitCodes } from '../exit-codes.js';
import { runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { loadCodeAgent, type SolveModel } from '../solve.js';
import { loadCommandConfig, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';
import { solveModelSettings, validationOf } from './solve-command.js';

const options = {
  ...STORE_OPTIONS,
  validate: { type: 'string' },
  out: { type: 'string', short: 'o' },
} as const satisfies OptionSpecs;

export const planCommand: CommandDefinition = {
  name: 'plan',
  summary: 'plan a coding task as stepwise solve would, into a plan file to review before solving',
  positionals: { min: 1, max: 1, names: '<task>' },
  options,
  help: `Usage: stepwise plan "<task>" [--out FILE] [--validate "<command>"] [options]

Asks the configured model for the plan stepwise solve would carry out (the same planner and repair
loop), and writes it as JSON without running anything. Review or edit it, approve it if you like
(stepwise approve FILE --by NAME), then carry it out with stepwise solve "<task>" --plan FILE.

Options:
  -o, --out FILE       where to write the plan (default plan.json in the current directory)
  --validate CMD       the validation the planner is told about (default: the configuration's)
  -w, --workspace DIR  the project (default: the configuration's workspace, else the current directory)
  -c, --config FILE    the configuration file

Examples:
  stepwise plan "Add input validation to the login function" --out plan.json`,
  async run(context, { values, positionals }) {
    const codeAgent = await loadCodeAgent('stepwise plan', 'plan');
    const loaded = await loadCommandConfig(context, values.config as string | undefined);
    const validation = validationOf(codeAgent, values.validate, loaded);
    const settings = runnerOptionsFromConfig(loaded, {
      cwd: context.io.cwd,
      ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
    });
    const model = (await createModel(solveModelSettings(settings), codeAgent.openAICompatible)) as SolveModel;
    const plan = await codeAgent.planTask({
      task: positionals[0] as string,
      workspace: settings.workspace,
      model,
      validate: Object.fromEntries(validation.map(({ name, ...command }) => [name, command])),
      protectedPaths: settings.protectedPaths,
      ...(settings.commands?.allow ? { allowCommands: settings.commands.allow } : {}),
    });
    const out = path.resolve(context.io.cwd, typeof values.out === 'string' ? values.out : 'plan.json');
    await writeFile(out, `${JSON.stringify(plan, null, 2)}\n`);
    print(context, `plan: ${plan.steps.map((step) => step.id).join(', ')} → ${out}`);
    print(
      context,
      `review it, then: stepwise solve ${JSON.stringify(positionals[0])} --plan ${path.relative(context.io.cwd, out) || out}`,
    );
    return ExitCodes.COMPLETED;
  },
};

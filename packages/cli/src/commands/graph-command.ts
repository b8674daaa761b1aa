import { validatePlan } from '@stepwise/core';
import { choice, type OptionSpecs } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { formatPlanProblems } from '../format-plan-problems.js';
import { type GraphFormat, planToGraph } from '../plan-graph.js';
import { readJsonFile } from '../read-plan-file.js';
import { type CommandContext, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  format: { type: 'string', short: 'f' },
} as const satisfies OptionSpecs;

export const graphCommand: CommandDefinition = {
  name: 'graph',
  summary: 'print the plan as a Mermaid or Graphviz graph',
  positionals: { min: 1, max: 1, names: '<plan.json>' },
  options,
  help: `Usage: stepwise graph <plan.json> [--format mermaid|dot]

Prints the plan's dependency graph: Mermaid (paste into Markdown on GitHub) or Graphviz DOT.

Options:
  -f, --format F   mermaid (default) or dot

Examples:
  stepwise graph plan.json > plan.mmd
  stepwise graph plan.json --format dot | dot -Tsvg > plan.svg`,
  async run(context: CommandContext, { values, positionals }) {
    const format = choice<GraphFormat>('graph', 'format', values.format, ['mermaid', 'dot']) ?? 'mermaid';
    const planFile = await readJsonFile(positionals[0] as string, 'plan', context.io.cwd);
    const validation = validatePlan(planFile.value);
    // A plan with a cycle or an unknown dependency can still be drawn; only its shape must be right.
    if (!validation.plan) {
      for (const line of formatPlanProblems(planFile, validation.problems)) print(context, line);
      return ExitCodes.INVALID_INPUT;
    }
    context.io.stdout.write(planToGraph(validation.plan, format));
    return ExitCodes.COMPLETED;
  },
};

import { type FunctionDefinition, type PlanProblem, planJsonSchema } from '@stepwise/core';

/** The one tool the planner offers: its parameters are the plan's JSON Schema (structured output). */
export const SUBMIT_PLAN = 'submit_plan';

export const PLANNER_SYSTEM_PROMPT = `You write execution plans. A plan is a JSON object: an "id", the "goal", and "steps". Each step has a unique "id" (letters, digits, "_", ".", ":" or "-"), the registered "tool" it calls with "args" that match that tool's input schema, and "dependsOn" listing the ids of steps that must finish first. A step may pass an earlier step's output as an argument with {"$ref": "<step id>", "pointer": "/json/pointer"}; the referenced step must be in its dependsOn. Dependencies may not form a cycle. Use only the tools listed. Answer by calling ${SUBMIT_PLAN} with the whole plan as its arguments (or, if you cannot call tools, with the plan as one JSON object and nothing else).`;

/** Steps without a tool are carried out by a model loop; only engines that allow them get this line. */
const GOAL_STEP_NOTE =
  'A step may omit "tool" and give a "description" instead: a model then carries it out with the tools.';

/** The `submit_plan` definition. `$schema` is dropped: several endpoints refuse it inside parameters. */
export function submitPlanDefinition(): FunctionDefinition {
  const { $schema: _ignored, ...parameters } = planJsonSchema();
  return {
    name: SUBMIT_PLAN,
    description: 'Submit the complete plan. The arguments are the plan itself.',
    parameters,
  };
}

/** The opening request: goal, the host's context and every tool the plan may use, with its schema. */
export function goalMessage(
  goal: string,
  tools: readonly FunctionDefinition[],
  options: { readonly context?: string; readonly goalSteps: boolean },
): string {
  const lines = [`Goal: ${goal}`];
  if (options.context) lines.push('', 'Context:', options.context);
  lines.push('', 'Tools the steps may call (name, description, input JSON Schema):');
  for (const tool of tools) {
    lines.push(`- ${tool.name}: ${tool.description}`, `  input: ${JSON.stringify(tool.parameters)}`);
  }
  if (tools.length === 0) lines.push('(none registered)');
  if (options.goalSteps) lines.push('', GOAL_STEP_NOTE);
  return lines.join('\n');
}

/** What the model reads after a rejected plan: every problem with its code and JSON path. */
export function problemsMessage(problems: readonly PlanProblem[]): string {
  const lines = [`The plan was rejected: ${problems.length} problem${problems.length === 1 ? '' : 's'}.`];
  for (const problem of problems) {
    lines.push(`- ${problem.code} ${problem.kind} at ${problem.path || '/'}: ${problem.message}`);
  }
  lines.push(`Fix every problem and send the whole corrected plan with ${SUBMIT_PLAN}.`);
  return lines.join('\n');
}

import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { approvePlan, validatePlan } from '@stepwise/core';
import { type OptionSpecs, UsageError } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { formatPlanProblems } from '../format-plan-problems.js';
import { readJsonFile } from '../read-plan-file.js';
import { type CommandContext, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  by: { type: 'string' },
  out: { type: 'string', short: 'o' },
} as const satisfies OptionSpecs;

/** `plan.json` → `plan.approval.json`. */
export function defaultApprovalPath(planFile: string): string {
  const extension = path.extname(planFile);
  return `${extension ? planFile.slice(0, -extension.length) : planFile}.approval.json`;
}

export const approveCommand: CommandDefinition = {
  name: 'approve',
  summary: 'write a digest-bound authorization for a plan',
  positionals: { min: 1, max: 1, names: '<plan.json>' },
  options,
  help: `Usage: stepwise approve <plan.json> --by NAME [--out FILE]

Approves one exact plan: the authorization records the plan's SHA-256 digest, so editing the plan
afterwards voids it (E003). The sequential engine runs only approved plans; each authorization
authorizes one run (running it again replays the recorded results).

Options:
      --by NAME    who approves (required; journaled with the run)
  -o, --out FILE   where to write it (default: <plan>.approval.json next to the plan)

Examples:
  stepwise approve plan.json --by alice
  stepwise run plan.json --engine sequential --authorization plan.approval.json`,
  async run(context: CommandContext, { values, positionals }) {
    const file = positionals[0] as string;
    if (typeof values.by !== 'string' || values.by.trim() === '') {
      throw new UsageError('stepwise approve: --by NAME is required (who approves the plan)');
    }
    const planFile = await readJsonFile(file, 'plan', context.io.cwd);
    const validation = validatePlan(planFile.value);
    if (!validation.ok || !validation.plan) {
      for (const line of formatPlanProblems(planFile, validation.problems)) print(context, line);
      context.io.stderr.write(`${file}: not approved, the plan is invalid\n`);
      return ExitCodes.INVALID_INPUT;
    }
    const authorization = approvePlan(validation.plan, { by: values.by.trim() });
    const out = typeof values.out === 'string' ? values.out : defaultApprovalPath(file);
    await writeFile(path.resolve(context.io.cwd, out), `${JSON.stringify(authorization, null, 2)}\n`);
    print(
      context,
      `${context.palette.green('✓')} approved plan ${authorization.planId} (digest ${authorization.planDigest.slice(0, 12)}…) by ${authorization.by} → ${out}`,
    );
    return ExitCodes.COMPLETED;
  },
};

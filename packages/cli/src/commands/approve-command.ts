import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { approvePlan, ErrorCodes, type Plan, readVerifiedJournal, StepwiseError, validatePlan } from '@stepwise/core';
import { foldRun } from '@stepwise/core/store';
import { type OptionSpecs, STORE_OPTIONS, UsageError } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { formatPlanProblems } from '../format-plan-problems.js';
import { readJsonFile } from '../read-plan-file.js';
import { type CommandContext, commandRedactor, loadCommandConfig, openCommandStore, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  ...STORE_OPTIONS,
  by: { type: 'string' },
  out: { type: 'string', short: 'o' },
} as const satisfies OptionSpecs;

/** `plan.json` → `plan.approval.json`. */
export function defaultApprovalPath(planFile: string): string {
  const extension = path.extname(planFile);
  return `${extension ? planFile.slice(0, -extension.length) : planFile}.approval.json`;
}

/** The plan of a journaled run as it is now (its latest revision). */
async function journaledPlan(
  context: CommandContext,
  values: Record<string, string | boolean | undefined>,
  runId: string,
): Promise<Plan> {
  const { store, journalKey } = await openCommandStore(context, values);
  try {
    // What a person approves must be what was journaled: a changed journal is refused (E507).
    const plan = foldRun((await readVerifiedJournal(store, runId, { journalKey })).events).plan;
    if (!plan)
      throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} is not in the journal`, { location: runId });
    return plan;
  } finally {
    await store.close();
  }
}

export const approveCommand: CommandDefinition = {
  name: 'approve',
  summary: 'write a digest-bound authorization for a plan',
  positionals: { min: 1, max: 1, names: '<plan.json|runId>' },
  options,
  help: `Usage: stepwise approve <plan.json|runId> --by NAME [--out FILE] [--db F]

Approves one exact plan: the authorization records the plan's SHA-256 digest, so editing the plan
afterwards voids it (E003). The sequential engine runs only approved plans; each authorization
authorizes one run (running it again replays the recorded results).

Given a run id, approves the run's plan as it is now in the journal: a strict run whose plan was
revised without an approval waits for one; resume it with --authorization.

Options:
      --by NAME    who approves (required; journaled with the run)
  -o, --out FILE   where to write it (default: <plan>.approval.json next to the plan)

Examples:
  stepwise approve plan.json --by alice
  stepwise run plan.json --engine sequential --authorization plan.approval.json
  stepwise approve run_0123abcd --by bob && stepwise resume run_0123abcd --authorization run_0123abcd.approval.json`,
  async run(context: CommandContext, { values, positionals }) {
    const file = positionals[0] as string;
    if (typeof values.by !== 'string' || values.by.trim() === '') {
      throw new UsageError('stepwise approve: --by NAME is required (who approves the plan)');
    }
    let plan: Plan;
    // What is printed is redacted as `stepwise run` would redact it; the approval file is the plan's own.
    const redactor = commandRedactor(context, await loadCommandConfig(context, values.config as string | undefined));
    if (file.startsWith('run_') && !existsSync(path.resolve(context.io.cwd, file))) {
      plan = await journaledPlan(context, values, file);
    } else {
      const planFile = await readJsonFile(file, 'plan', context.io.cwd);
      const validation = validatePlan(planFile.value, { redactor });
      if (!validation.ok || !validation.plan) {
        for (const line of formatPlanProblems(planFile, validation.problems)) print(context, line);
        context.io.stderr.write(`${file}: not approved, the plan is invalid\n`);
        return ExitCodes.INVALID_INPUT;
      }
      plan = validation.plan;
    }
    const authorization = approvePlan(plan, { by: values.by.trim() });
    const out = typeof values.out === 'string' ? values.out : defaultApprovalPath(file);
    await writeFile(path.resolve(context.io.cwd, out), `${JSON.stringify(authorization, null, 2)}\n`);
    print(
      context,
      `${context.palette.green('✓')} approved plan ${redactor.redactText(authorization.planId)} (digest ${authorization.planDigest.slice(0, 12)}…) by ${authorization.by} → ${out}`,
    );
    return ExitCodes.COMPLETED;
  },
};

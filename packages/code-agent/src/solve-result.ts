import { type Plan, type PlanRevision, type RunResult, type RunStore, readAll } from '@stepwise/core';
import { foldRun } from '@stepwise/core/store';
import type { ValidationSummary } from './attempt-feedback.js';
import { attemptHistory } from './attempt-history.js';
import { type AttemptReport, attemptReport } from './code-agent-attempt.js';
import { PLAN_TASK_TOOL } from './plan-task-tool.js';

/** One implementation attempt of one step, with its validation (from the run's journal). */
export interface SolveAttempt extends AttemptReport {
  /** The code agent's run (every attempt is part of it). */
  readonly runId: string;
  /** The mandatory validation that failed, else the first one (absent when the attempt was not validated). */
  readonly validation?: ValidationSummary;
}

/** How each step of the plan ended. */
export interface SolveStepSummary {
  readonly stepId: string;
  /** `pending`: never started (the run stopped first). */
  readonly status: string;
  readonly attempts: number;
  readonly error?: string;
}

export interface SolveResult {
  /** `solved`: every step validated; `partial`: some steps validated, others failed or were skipped; `failed`: none. */
  readonly status: 'solved' | 'partial' | 'failed';
  /** The code agent's run: `stepwise show <runId>` lists its steps, attempts, validations and rollbacks. */
  readonly runId: string;
  /** The run's own status as journaled. */
  readonly runStatus: RunResult['status'];
  /** The plan as it ended (its last revision). */
  readonly plan: Plan;
  /** Revisions of the plan (the planned steps, replans) in order. */
  readonly revisions: readonly Pick<PlanRevision, 'revision' | 'plan' | 'diff' | 'digest' | 'parentDigest'>[];
  readonly attempts: readonly SolveAttempt[];
  readonly steps: readonly SolveStepSummary[];
  /** The first implementation step that failed, if any. */
  readonly failedStepId?: string;
  /** A few lines for people: what ran, what failed, what was rolled back. */
  readonly summary: string;
}

/** The attempt with its run and its deciding validation. */
export function withValidation(report: AttemptReport, runId: string): SolveAttempt {
  const validation =
    report.validations.find((each) => !each.passed && !each.optional) ?? report.validations[0] ?? undefined;
  return { ...report, runId, ...(validation ? { validation } : {}) };
}

function describeAttempt(attempt: SolveAttempt): string {
  const verdicts = attempt.validations.map((validation) => {
    const failing = validation.failingTests.map((test) => test.name);
    const what = validation.passed
      ? 'passed'
      : `failed${failing.length > 0 ? ` (${failing.length} failing: ${failing.slice(0, 3).join('; ')}${failing.length > 3 ? '; …' : ''})` : ''}`;
    return `\`${validation.command.join(' ')}\` ${what}`;
  });
  const restored = attempt.rollback ? [...attempt.rollback.restored, ...attempt.rollback.removed] : [];
  return [
    `- ${attempt.stepId} attempt ${attempt.attempt}: step ${attempt.status}${attempt.error ? ` (${attempt.error})` : ''}`,
    verdicts.length > 0 ? `, ${verdicts.join(', ')}` : ', not validated',
    attempt.rolledBack ? `, rolled back${restored.length > 0 ? ` (${restored.join(', ')})` : ''}` : '',
  ].join('');
}

function summarize(result: Omit<SolveResult, 'summary'>): string {
  const heading = { solved: 'Solved', partial: 'Partly solved', failed: 'Not solved' }[result.status];
  const lines = [`${heading}: ${result.plan.goal ?? result.plan.id}`];
  for (const attempt of result.attempts) lines.push(describeAttempt(attempt));
  for (const revision of result.revisions) {
    lines.push(
      `- plan revised (revision ${revision.revision}): ${revision.plan.steps.map((step) => step.id).join(', ')}`,
    );
  }
  for (const step of result.steps) {
    lines.push(
      `- step ${step.stepId}: ${step.status}${step.attempts > 0 ? ` after ${step.attempts} attempt${step.attempts === 1 ? '' : 's'}` : ''}`,
    );
  }
  return lines.join('\n');
}

/** The code agent's result, read back from its run's journal (a resumed run's included). */
export async function solveResult(store: RunStore, run: RunResult): Promise<SolveResult> {
  const events = await readAll(store, run.runId);
  const folded = foldRun(events);
  const plan = folded.plan as Plan;
  const attempts = attemptHistory(events)
    .attempts.map((records) => attemptReport(records))
    .filter((report): report is AttemptReport => report !== undefined)
    .map((report) => withValidation(report, run.runId));
  const implementation = plan.steps.filter((step) => step.tool !== PLAN_TASK_TOOL);
  const steps = implementation.map((step): SolveStepSummary => {
    const state = folded.steps.get(step.id);
    const error = state?.result?.error?.message;
    return {
      stepId: step.id,
      status: state?.status ?? 'pending',
      attempts: attempts.filter((attempt) => attempt.stepId === step.id).length,
      ...(error === undefined ? {} : { error }),
    };
  });
  const solvedSteps = steps.filter((step) => step.status === 'succeeded').length;
  const status =
    run.status === 'completed' && solvedSteps === steps.length && steps.length > 0
      ? 'solved'
      : solvedSteps > 0
        ? 'partial'
        : 'failed';
  const failed = steps.find((step) => step.status === 'failed');
  const revisions = folded.revisions.map(({ revision, plan: revised, diff, digest, parentDigest }) => ({
    revision,
    plan: revised,
    diff,
    digest,
    parentDigest,
  }));
  const result = {
    status,
    runId: run.runId,
    runStatus: run.status,
    plan,
    revisions,
    attempts,
    steps,
    ...(failed ? { failedStepId: failed.stepId } : {}),
  } as const;
  return { ...result, summary: summarize(result) };
}

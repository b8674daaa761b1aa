import {
  ErrorCodes,
  type Plan,
  type PlanAuthorization,
  planDigest,
  StepwiseError,
  type ToolRegistry,
  validatePlan,
  verifyAuthorization,
} from '@stepwise/core';
import { type CheckedPlan, deriveRunId, type ProblemRedactor, planInvalidError, redact } from '@stepwise/core/engine';

/** A plan that passed every check the strict engine makes before anything runs. */
export interface ApprovedPlan {
  readonly plan: Plan;
  readonly authorization: PlanAuthorization;
  /** Derived from the authorization: one approval, one run. */
  readonly runId: string;
  /** `planDigest(plan)`, computed once for every check that needs it. */
  readonly digest: string;
}

/**
 * Rejects before anything runs: an invalid plan (E001, or E201/E202 when those are the only
 * problems, with every problem in `details.problems`), a missing or unapproved authorization
 * (E002), an authorization for another plan or digest (E003), a `runId` that is not the one the
 * authorization derives (E003).
 */
export function checkApprovedPlan(
  plan: unknown,
  authorization: PlanAuthorization | undefined,
  tools: ToolRegistry,
  runId?: string,
  redactor?: ProblemRedactor,
): ApprovedPlan {
  return approvedPlanOf({ validation: validateStrictPlan(plan, tools, redactor) }, authorization, runId);
}

/** As `checkApprovedPlan`, from a check already made (the strict policy engine's `check`, which remembers plans). */
export function approvedPlanOf(
  checked: CheckedPlan,
  authorization: PlanAuthorization | undefined,
  runId: string | undefined,
): ApprovedPlan {
  const { validation } = checked;
  if (!validation.ok) throw planInvalidError(validation.problems);
  const digest = checked.digest ?? planDigest(validation.plan);
  return {
    plan: validation.plan,
    authorization: authorization as PlanAuthorization,
    runId: authorizedRunId(validation.plan, authorization, runId, digest),
    digest,
  };
}

/**
 * The strict engine's validation. Problems quote the plan and reach the host in thrown errors:
 * redacted with the engine's redactor (default: the built-in token formats).
 */
export function validateStrictPlan(plan: unknown, tools: ToolRegistry, redactor?: ProblemRedactor) {
  return validatePlan(plan, { tools, engine: 'sequential', redactor: redactor ?? { redactText: redact } });
}

/** The run id a valid plan's authorization derives, after checking it (E002 / E003). */
export function authorizedRunId(
  plan: Plan,
  authorization: PlanAuthorization | undefined,
  runId: string | undefined,
  digest?: string,
): string {
  verifyAuthorization(plan, authorization, digest);
  const derived = deriveRunId(authorization as PlanAuthorization);
  if (runId !== undefined && runId !== derived) {
    throw new StepwiseError(
      ErrorCodes.PLAN_MISMATCH,
      `the sequential engine derives the run id from the authorization (${derived}); "${runId}" would let one approval run twice`,
      { location: '/runId', details: { expected: derived, actual: runId } },
    );
  }
  return derived;
}

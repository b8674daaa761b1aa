import { ErrorCodes, type PlanAuthorization, StepwiseError, verifyAuthorization } from '@stepwise/core';
import { createPolicyEngine, type EnginePolicy, type PolicyEngine } from '@stepwise/core/engine';
import { authorizedRunId } from './approved-plan.js';
import type { SequentialEngineOptions } from './sequential-options.js';

export const ENGINE_NAME = 'sequential';

/** The strict policy: array order, one step at a time, arguments as written, stop at the first failure, no retries. */
export const STRICT_POLICY: EnginePolicy = Object.freeze({
  name: ENGINE_NAME,
  validation: 'sequential',
  references: 'literal',
  stopOn: 'any',
  unstarted: 'leave',
  duration: 'steps',
  concurrency: 1,
  toolConcurrency: {},
  retry: false,
  random: Math.random,
  onStepFailed: undefined,
  goalSteps: undefined,
});

/**
 * The strict engine over the shared scheduler: a run needs an authorization for the plan's exact
 * digest (E002 / E003) and its id is derived from it, so running an approved plan again replays
 * the recorded run: one approval, one execution. A revision while it runs needs an approval of
 * its own digest (`revisionApproval`).
 */
export function strictEngine(options: SequentialEngineOptions): PolicyEngine {
  const revisionApproval = options.revisionApproval ?? 'wait';
  if (revisionApproval !== 'wait' && revisionApproval !== 'fail') {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'revisionApproval must be "wait" or "fail"', {
      location: 'revisionApproval',
    });
  }
  return createPolicyEngine({
    policy: { ...STRICT_POLICY, revisionApproval },
    options,
    authorize(plan, runOptions, digest) {
      const runId = authorizedRunId(plan, runOptions.authorization, runOptions.runId, digest);
      // Verified against the plan: the digest need not be hashed again.
      return { runId, planDigest: (runOptions.authorization as PlanAuthorization).planDigest };
    },
    // The registry may have changed since the crash: the plan must still pass, and its approval hold.
    verifyResume: (plan, authorization) => verifyAuthorization(plan, authorization),
  });
}

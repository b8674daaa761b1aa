import * as crypto from 'node:crypto';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { canonicalJson } from './canonical-json.js';
import { tooDeepMessage } from './nesting-depth.js';
import type { Plan } from './plan-schema.js';

/** A person's approval of one exact plan. Editing the plan changes its digest and voids it. */
export interface PlanAuthorization {
  /** Unique per approval: approving the same plan twice gives two authorizations (two runs). */
  readonly id: string;
  readonly planId: string;
  readonly planDigest: string;
  readonly by: string;
  readonly at: string;
}

// `crypto.hash` (Node 20.12+) hashes in one call, 2.5× faster than a Hash object for the short
// inputs of execution ids; older Node 20 releases fall back to `createHash`.
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** SHA-256 of `text` (UTF-8) as 64 hex digits. */
export function sha256(text: string): string {
  return oneShotHash ? oneShotHash('sha256', text, 'hex') : createHash('sha256').update(text).digest('hex');
}

export { canonicalJson };

/** SHA-256 (hex) of the plan's canonical JSON: key order does not matter, every value does. */
export function planDigest(plan: Plan): string {
  let text: string;
  try {
    text = canonicalJson(plan);
  } catch (error) {
    // A plan validatePlan refused as too deep (E001): the JSON walk overflows the stack.
    if (!(error instanceof RangeError)) throw error;
    throw new StepwiseError(ErrorCodes.PLAN_INVALID, tooDeepMessage('plan too deep to hash'), { location: '/' });
  }
  return sha256(text);
}

export function approvePlan(plan: Plan, options: { by: string; at?: Date }): PlanAuthorization {
  if (!plan || typeof plan !== 'object' || typeof plan.id !== 'string' || !Array.isArray(plan.steps)) {
    throw new StepwiseError(ErrorCodes.PLAN_INVALID, 'approvePlan needs a plan: an object with an id and steps', {
      location: '/',
    });
  }
  if (!options?.by) {
    throw new StepwiseError(ErrorCodes.NOT_AUTHORIZED, 'approvePlan needs { by }: who approves', { location: '/by' });
  }
  return {
    id: `auth_${randomUUID()}`,
    planId: plan.id,
    planDigest: planDigest(plan),
    by: options.by,
    at: (options.at ?? new Date()).toISOString(),
  };
}

/**
 * Throws E002 when there is no usable authorization, E003 when it is for another plan or digest.
 * `digest`: `planDigest(plan)` when the caller has computed it already (hashing a large plan costs
 * milliseconds); it must be that plan's digest.
 */
export function verifyAuthorization(
  plan: Plan,
  authorization: PlanAuthorization | undefined | null,
  digest?: string,
): void {
  if (
    !authorization ||
    typeof authorization.id !== 'string' ||
    typeof authorization.by !== 'string' ||
    !authorization.by ||
    typeof authorization.planDigest !== 'string'
  ) {
    throw new StepwiseError(ErrorCodes.NOT_AUTHORIZED, 'the plan has no authorization: approve it first', {
      location: '/authorization',
    });
  }
  if (authorization.planId !== plan.id) {
    throw new StepwiseError(
      ErrorCodes.PLAN_MISMATCH,
      // Without the ids: either may hold a secret, and this message reaches the host unredacted.
      'the authorization is for another plan id: approve this plan',
      { location: '/authorization/planId' },
    );
  }
  const actual = digest ?? planDigest(plan);
  if (authorization.planDigest !== actual) {
    throw new StepwiseError(
      ErrorCodes.PLAN_MISMATCH,
      'the plan changed after it was approved (digest mismatch): approve it again',
      {
        location: '/authorization/planDigest',
        details: { expected: authorization.planDigest, actual },
      },
    );
  }
}

/**
 * `ex_` + hash of (runId, stepId, attempt[, sub]): the same inputs always give the same id.
 * 96 bits: collisions are out of reach (2^48 executions), and the id is repeated in every
 * journal row of the execution, so its length is paid many times.
 */
export function deriveExecutionId(runId: string, stepId: string, attempt: number, sub?: string): string {
  const parts = sub === undefined ? [runId, stepId, attempt] : [runId, stepId, attempt, sub];
  return `ex_${sha256(parts.join('\u0000')).slice(0, 24)}`;
}

/** The strict engine's run id: one authorization, one run. */
export function deriveRunId(authorization: PlanAuthorization): string {
  return `run_${sha256(`${authorization.id}\u0000${authorization.planDigest}`).slice(0, 24)}`;
}

// Random bytes drawn 4 KiB at a time: one getrandom call per 341 run ids instead of one per id,
// which was a visible share of a short run's fixed cost.
let entropy = Buffer.alloc(0);
let entropyOffset = 0;

/** A random run id with the same 96 bits as derived ones. */
export function newRunId(): string {
  if (entropyOffset + 12 > entropy.length) {
    entropy = randomBytes(4096);
    entropyOffset = 0;
  }
  const id = entropy.toString('hex', entropyOffset, entropyOffset + 12);
  entropyOffset += 12;
  return `run_${id}`;
}

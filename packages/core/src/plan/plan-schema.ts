import { z } from 'zod';
import type { Precondition } from '../tools/preconditions.js';

/** Step ids are used in references (`"$id/pointer"`), so they may not contain `/` or `$`. */
export const StepIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'step ids use letters, digits, "_", ".", ":" and "-"');

/** Backoff for retryable failures. Delay n = min(initialDelayMs × factor^(n-1), maxDelayMs) ± jitter. */
export const RetryPolicySchema = z
  .object({
    maxAttempts: z.number().int().min(1).max(100),
    initialDelayMs: z.number().int().min(0).optional(),
    factor: z.number().min(1).optional(),
    maxDelayMs: z.number().int().min(0).optional(),
    /** Fraction of the delay drawn at random (0 = none, 0.2 = ±20%). */
    jitter: z.number().min(0).max(1).optional(),
    /**
     * Error codes retried for this step besides the ones a tool marks retryable, e.g. `['E304']`:
     * a command that exits non-zero is tried again.
     */
    on: z
      .array(z.string().regex(/^E\d{3}$/, 'an error code: E and three digits, e.g. E304'))
      .min(1)
      .optional(),
  })
  .strict();

/**
 * A check that must hold before the tool is called. `kind` picks a checker from the
 * precondition registry (`file_exists`, `dir_exists`, `project` from tools-node; hosts add more).
 */
export const PreconditionSchema = z
  .object({
    kind: z.string().min(1),
    path: z.string().optional(),
    description: z.string().optional(),
  })
  .catchall(z.unknown());

/** A criterion the agentic engine checks before accepting `complete_step`. */
export const ExpectationSchema = z
  .object({ kind: z.string().min(1), description: z.string().optional() })
  .catchall(z.unknown());

export const StepSchema = z
  .object({
    id: StepIdSchema,
    /** The registered tool to call. Optional only for agentic goal steps. */
    tool: z.string().min(1).optional(),
    args: z.record(z.string(), z.unknown()).optional(),
    description: z.string().optional(),
    dependsOn: z.array(z.string()).optional(),
    requiresApproval: z.boolean().optional(),
    /** Default true: a failing critical step fails the run. */
    critical: z.boolean().optional(),
    retry: RetryPolicySchema.optional(),
    timeoutMs: z.number().int().positive().optional(),
    preconditions: z.array(PreconditionSchema).optional(),
    /** Agentic: criteria that must hold before the step counts as complete. */
    expect: z.array(ExpectationSchema).optional(),
    /** Agentic: tools the model may call in this step (default: all registered). */
    tools: z.array(z.string()).optional(),
    /** Agentic: turn limit for this step. */
    maxTurns: z.number().int().positive().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

export const PlanSchema = z
  .object({
    $schema: z.string().optional(),
    id: z.string().min(1).max(200),
    version: z.number().int().min(1).optional(),
    goal: z.string().optional(),
    /** Free text; conventionally READ_ONLY, MUTATE or EXPLORE. */
    intent: z.string().optional(),
    steps: z.array(StepSchema).min(1),
    metadata: z.record(z.string(), z.unknown()).optional(),
    /**
     * Set by a revision: 1 for the first, then 2, 3…; absent on a plan never revised. No default,
     * so an unrevised plan keeps the digest it had before revisions existed (approvals bind to it).
     */
    revision: z.number().int().min(1).optional(),
    /** Set by a revision: the digest of the plan it was made from (the digest chain). */
    parentDigest: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'a plan digest is 64 lowercase hex digits')
      .optional(),
  })
  .strict();

export type RetryPolicy = z.infer<typeof RetryPolicySchema>;
export type { Precondition };

// The schema parses to the shape the precondition checkers take.
PreconditionSchema satisfies z.ZodType<Precondition>;
export type Expectation = z.infer<typeof ExpectationSchema>;
export type Step = z.infer<typeof StepSchema>;
export type Plan = z.infer<typeof PlanSchema>;

/** The plan's JSON Schema (draft 2020-12), for editors and LLM structured output. */
export function planJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(PlanSchema, {
    target: 'draft-2020-12',
    io: 'input',
  }) as Record<string, unknown>;
}

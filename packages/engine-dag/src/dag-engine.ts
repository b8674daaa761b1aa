import type { Engine, Plan, ResumeOptions, RunOptions } from '@stepwise/core';
import { createPolicyEngine, journaledPolicy, permissivePolicy, policyFromJournal } from '@stepwise/core/engine';
import type { DagEngineOptions, DagRunHandle } from './dag-options.js';

/** The dag engine: `Engine` whose handles also report progress. */
export interface DagEngine extends Engine {
  readonly name: 'dag';
  run(plan: Plan, options?: RunOptions): DagRunHandle;
  resume(runId: string, options?: ResumeOptions): DagRunHandle;
}

/**
 * The permissive engine: a step starts the moment its own dependencies succeeded (no waves),
 * bounded by `concurrency` and per-tool limits; `$ref` references resolve from earlier outputs;
 * failures follow `critical`, retries, and the optional recovery hook; everything is journaled
 * and `resume(runId)` continues after a crash. With `goalSteps`, steps without a tool are
 * carried out by that executor (the model loop of `@stepwise/engine-agentic`).
 *
 * Throws E601 for invalid options. `run` throws synchronously for an invalid plan (E001, or
 * E201 / E202 when those are the only problems; `details.problems` lists every problem), before
 * anything is journaled; what needs the store arrives through the handle's `result`.
 */
export function dagEngine(options: DagEngineOptions): DagEngine {
  const policy = permissivePolicy(options);
  const engine = createPolicyEngine({
    policy,
    options,
    journaledOptions: journaledPolicy(policy),
    policyFromJournal: (journaled) => policyFromJournal(journaled, policy),
  });
  return {
    name: 'dag',
    validate: engine.validate,
    run: (plan, runOptions) => engine.run(plan, runOptions),
    resume: (runId, resumeOptions) => engine.resume(runId, resumeOptions),
  };
}

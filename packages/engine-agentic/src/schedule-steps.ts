import {
  deriveExecutionId,
  ErrorCodes,
  endStep,
  type Plan,
  type RunJournal,
  type RunStatus,
  type Step,
  type StepResult,
  StepwiseError,
} from '@stepwise/core';

export interface ScheduleOptions {
  readonly plan: Plan;
  readonly runId: string;
  readonly journal: RunJournal;
  /** Steps run at the same time at most. */
  readonly concurrency: number;
  /** Aborted when the host cancels the run. */
  readonly signal: AbortSignal;
  /** Results already journaled (resume). */
  readonly ended: ReadonlyMap<string, StepResult>;
  /** Steps a crash left in flight, with how to finish them (resume); they start first. */
  readonly inFlight: ReadonlyMap<
    string,
    (signal: AbortSignal, outputs: ReadonlyMap<string, unknown>) => Promise<StepResult>
  >;
  /** Runs a step that has not started. */
  readonly runStep: (
    step: Step,
    index: number,
    signal: AbortSignal,
    outputs: ReadonlyMap<string, unknown>,
  ) => Promise<StepResult>;
}

export interface ScheduleOutcome {
  readonly status: RunStatus;
  /** Results of attempted and skipped steps, in plan order. */
  readonly steps: StepResult[];
}

function isCritical(step: Step): boolean {
  return step.critical !== false;
}

/**
 * The ready queue: a step starts once every dependency succeeded, at most `concurrency` at a time.
 * A failed critical step fails the run: in-flight steps are cancelled and nothing else starts.
 * A failed non-critical step skips its dependents (transitively, journaled as `skipped`), and
 * independent steps continue. Status: completed (all succeeded), failed (a critical failure),
 * cancelled (the host cancelled), partial (anything else).
 */
export async function scheduleSteps(options: ScheduleOptions): Promise<ScheduleOutcome> {
  const { plan, journal } = options;
  const results = new Map<string, StepResult>(options.ended);
  const outputs = new Map<string, unknown>();
  for (const [stepId, result] of results) if (result.status === 'succeeded') outputs.set(stepId, result.output);
  const stepById = new Map(plan.steps.map((step, index) => [step.id, { step, index }]));
  const dependents = new Map<string, string[]>();
  for (const step of plan.steps) {
    for (const dependency of step.dependsOn ?? []) {
      const list = dependents.get(dependency) ?? [];
      list.push(step.id);
      dependents.set(dependency, list);
    }
  }

  // Aborted by the host's cancel and by a critical failure; every step's signal follows it.
  const controller = new AbortController();
  const onCancel = () => controller.abort(options.signal.reason);
  if (options.signal.aborted) onCancel();
  else options.signal.addEventListener('abort', onCancel, { once: true });

  let criticalFailure = false;
  let fatal: unknown;
  const running = new Map<string, Promise<void>>();

  const skipDependents = async (failed: Step, status: string): Promise<void> => {
    const queue = [...(dependents.get(failed.id) ?? [])];
    const because = new Map(queue.map((id) => [id, failed.id]));
    while (queue.length > 0) {
      const id = queue.shift() as string;
      if (results.has(id) || running.has(id)) continue;
      const entry = stepById.get(id);
      if (!entry) continue;
      const cause = because.get(id) as string;
      const result = await endStep(
        entry.step,
        0,
        deriveExecutionId(options.runId, id, 0),
        new Date().toISOString(),
        performance.now(),
        {
          status: 'skipped',
          error: {
            code: ErrorCodes.DEPENDENCY_FAILED,
            message: `skipped: dependency "${cause}" ${cause === failed.id ? status : 'was skipped'}`,
            retryable: false,
            location: id,
          },
          artifacts: [],
        },
        { journal },
      );
      results.set(id, result);
      for (const next of dependents.get(id) ?? []) {
        if (!because.has(next)) because.set(next, id);
        queue.push(next);
      }
    }
  };

  const settle = async (step: Step, result: StepResult): Promise<void> => {
    results.set(step.id, result);
    if (result.status === 'succeeded') {
      outputs.set(step.id, result.output);
      return;
    }
    if (result.status === 'cancelled' && controller.signal.aborted) return;
    if (isCritical(step) && result.status !== 'skipped') {
      criticalFailure = true;
      controller.abort(
        new StepwiseError(ErrorCodes.STEP_CANCELLED, `critical step "${step.id}" ${result.status}`, {
          location: step.id,
        }),
      );
      return;
    }
    await skipDependents(step, result.status);
  };

  const launch = (step: Step, work: () => Promise<StepResult>) => {
    const promise = work()
      .then((result) => settle(step, result))
      .catch((error: unknown) => {
        fatal ??= error;
        controller.abort(error);
      })
      .finally(() => running.delete(step.id));
    running.set(step.id, promise);
  };

  const isReady = (step: Step) =>
    !results.has(step.id) &&
    !running.has(step.id) &&
    (step.dependsOn ?? []).every((dependency) => results.get(dependency)?.status === 'succeeded');

  // Resume: a failure journaled before the crash still applies its rule.
  for (const [stepId, result] of results) {
    const entry = stepById.get(stepId);
    if (!entry || result.status === 'succeeded') continue;
    if (isCritical(entry.step) && result.status !== 'skipped' && result.status !== 'cancelled') criticalFailure = true;
    else await skipDependents(entry.step, result.status);
  }

  try {
    if (!criticalFailure) {
      for (const [stepId, work] of options.inFlight) {
        const entry = stepById.get(stepId);
        if (entry) launch(entry.step, () => work(controller.signal, outputs));
      }
    }
    while (true) {
      if (!controller.signal.aborted && !criticalFailure) {
        for (const [index, step] of plan.steps.entries()) {
          if (running.size >= options.concurrency) break;
          if (isReady(step)) launch(step, () => options.runStep(step, index, controller.signal, outputs));
        }
      }
      if (running.size === 0) break;
      await Promise.race(running.values());
    }
  } finally {
    options.signal.removeEventListener('abort', onCancel);
  }
  if (fatal !== undefined) throw fatal;

  const steps = plan.steps
    .map((step) => results.get(step.id))
    .filter((result): result is StepResult => result !== undefined);
  let status: RunStatus;
  if (options.signal.aborted) status = 'cancelled';
  else if (criticalFailure) status = 'failed';
  else if (steps.length === plan.steps.length && steps.every((result) => result.status === 'succeeded'))
    status = 'completed';
  else status = 'partial';
  return { status, steps };
}

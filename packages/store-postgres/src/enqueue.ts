import { randomUUID } from 'node:crypto';
import { ErrorCodes, type Plan, type PlanAuthorization, StepwiseError } from '@stepwise/core';
import { sql } from 'kysely';
import type { PostgresStore } from './create-postgres-store.js';
import { queueChannel } from './queue-notifications.js';
import type { QueuedRunOptions } from './work-queue.js';

export interface EnqueueOptions {
  /** The store the workers share. */
  readonly store: PostgresStore;
  /** Default `default`. Workers take runs from one queue each. */
  readonly queue?: string;
  /** Default a random `run_<uuid>`. Enqueuing the same id again enqueues nothing (the first plan stays). */
  readonly runId?: string;
  /** Higher first; then first enqueued first. Default 0. */
  readonly priority?: number;
  /** Passed to `engine.run` (the sequential engine requires one). */
  readonly authorization?: PlanAuthorization;
  readonly parentRunId?: string;
}

export interface EnqueuedRun {
  readonly runId: string;
  readonly queue: string;
  /** False when a run with this id was already enqueued. */
  readonly created: boolean;
}

const NAME = /^[\w.:-]{1,200}$/;

function checkName(value: string, what: string): void {
  if (!NAME.test(value)) {
    throw new StepwiseError(
      ErrorCodes.INPUT_INVALID,
      `${what} "${value}" must be 1–200 letters, digits, '_', '.', ':' or '-'`,
      { location: what },
    );
  }
}

/**
 * Puts a plan on a queue; a worker (`createWorker`, `stepwise worker`) on any machine claims and runs
 * it. Any process may enqueue. The plan is validated by the worker's engine when the run starts.
 */
export async function enqueue(plan: Plan, options: EnqueueOptions): Promise<EnqueuedRun> {
  const queue = options.queue ?? 'default';
  const runId = options.runId ?? `run_${randomUUID()}`;
  checkName(queue, 'queue');
  checkName(runId, 'runId');
  if (typeof plan !== 'object' || plan === null || !Array.isArray((plan as { steps?: unknown }).steps)) {
    throw new StepwiseError(ErrorCodes.PLAN_INVALID, 'enqueue needs a plan with a steps array', { location: '/steps' });
  }
  const runOptions: QueuedRunOptions = {
    ...(options.authorization ? { authorization: options.authorization } : {}),
    ...(options.parentRunId ? { parentRunId: options.parentRunId } : {}),
  };
  await options.store.ready;
  const { connection } = options.store;
  // A new row wakes the queue's idle workers (LISTEN) when it commits; a run already enqueued, none.
  const inserted = await sql<{ run_id: string }>`
    with inserted as (
      insert into ${connection.table('work_queue')} (run_id, queue, plan, run_options, priority)
      values (${runId}, ${queue}, ${JSON.stringify(plan)}, ${JSON.stringify(runOptions)}, ${Math.trunc(options.priority ?? 0)})
      on conflict (run_id) do nothing
      returning run_id)
    select run_id, pg_notify(${queueChannel(connection.schema, queue)}, '0') from inserted`.execute(connection.db);
  return { runId, queue, created: inserted.rows.length > 0 };
}

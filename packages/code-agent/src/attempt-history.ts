import { type RunEvent, type RunStore, readAll } from '@stepwise/core';
import type {
  AttemptEndEvent,
  ValidationEndEvent,
  WorkspaceCheckpointEvent,
  WorkspaceRollbackEvent,
} from './code-agent-events.js';

/** What the journal holds about one attempt of one step (the key of every code-agent event). */
export interface AttemptRecords {
  readonly stepId: string;
  readonly attempt: number;
  checkpoint?: WorkspaceCheckpointEvent;
  readonly validations: ValidationEndEvent[];
  rollback?: WorkspaceRollbackEvent;
  end?: AttemptEndEvent;
}

/** The code agent's events of a run, grouped by attempt, in journal order. */
export interface AttemptHistory {
  readonly attempts: AttemptRecords[];
  /** `run-resume` events so far: each process that resumed the run adds one. */
  readonly resumes: number;
  get(stepId: string, attempt: number): AttemptRecords | undefined;
}

const key = (stepId: string, attempt: number) => `${stepId}\u0000${attempt}`;

/** Groups a journal's code-agent events by (step, attempt); the scheduler never reuses a pair in a run. */
export function attemptHistory(events: readonly RunEvent[]): AttemptHistory {
  const byKey = new Map<string, AttemptRecords>();
  const attempts: AttemptRecords[] = [];
  let resumes = 0;
  const of = (stepId: string, attempt: number) => {
    let records = byKey.get(key(stepId, attempt));
    if (!records) {
      records = { stepId, attempt, validations: [] };
      byKey.set(key(stepId, attempt), records);
      attempts.push(records);
    }
    return records;
  };
  for (const event of events) {
    if (event.type === 'run-resume') resumes++;
    else if (event.type === 'workspace-checkpoint') of(event.stepId, event.attempt).checkpoint = event;
    else if (event.type === 'validation-end') of(event.stepId, event.attempt).validations.push(event);
    else if (event.type === 'workspace-rollback') of(event.stepId, event.attempt).rollback = event;
    else if (event.type === 'attempt-end') of(event.stepId, event.attempt).end = event;
  }
  return { attempts, resumes, get: (stepId, attempt) => byKey.get(key(stepId, attempt)) };
}

/** The run's attempts as its store holds them (what is durable). */
export async function readAttemptHistory(store: RunStore, runId: string): Promise<AttemptHistory> {
  return attemptHistory(await readAll(store, runId));
}

import type { PlanChange, RunEvent, RunEventBase } from '@stepwise/core';
import type { PlanReviseEvent } from '@stepwise/core/store';

// The code agent's events as the history reads them: `@stepwise/code-agent` journals and declares
// them; the dashboard reads them by their type and fields without loading that package (which
// depends on this one for its tests). The code agent's tests check that its events are these records.

/** Files an implementation attempt of the code agent created, modified and deleted. */
export interface WorkspaceChangeList {
  readonly created: readonly string[];
  readonly modified: readonly string[];
  readonly deleted: readonly string[];
}

/** A failing test a validation command's output named. */
export interface FailingTestRecord {
  readonly name: string;
  readonly file?: string;
  /** The test's own lines of the output. */
  readonly output: string;
}

/** The code agent's `attempt-end`: an implementation attempt of a step ended. */
export interface AttemptEndRecord extends RunEventBase {
  readonly type: 'attempt-end';
  readonly stepId: string;
  readonly attempt: number;
  /** The plan revision the attempt ran under (absent in older journals: 0). */
  readonly revision?: number;
  /** The child run that implemented the step. */
  readonly implementationRunId: string;
  readonly status: 'succeeded' | 'failed';
  readonly error?: string;
  readonly changes: WorkspaceChangeList;
  /** The attempt's changes were undone. */
  readonly rolledBack: boolean;
}

/** The code agent's `validation-end`: a validation command ran after an attempt. */
export interface ValidationEndRecord extends RunEventBase {
  readonly type: 'validation-end';
  readonly stepId: string;
  readonly attempt: number;
  readonly revision?: number;
  /** The command's name in the configuration (e.g. `test`). */
  readonly name?: string;
  /** An optional command's failure does not fail the attempt. */
  readonly optional?: boolean;
  readonly validationRunId: string;
  readonly command: readonly string[];
  /** `null` when the command did not run to an exit. */
  readonly exitCode: number | null;
  readonly passed: boolean;
  readonly failingTests: readonly FailingTestRecord[];
  readonly output: string;
  readonly error?: string;
}

/** The code agent's `workspace-rollback`: a failed attempt's changes were undone. */
export interface WorkspaceRollbackRecord extends RunEventBase {
  readonly type: 'workspace-rollback';
  readonly stepId: string;
  readonly attempt: number;
  readonly revision?: number;
  /** Files written back as they were. */
  readonly restored: readonly string[];
  /** Files the attempt created, deleted again. */
  readonly removed: readonly string[];
}

type HistoryEvent = RunEvent | AttemptEndRecord | ValidationEndRecord | WorkspaceRollbackRecord;

/** One revision of a run's plan, for people: who, when, why, and what changed in a few words. */
export interface RevisionEntry {
  readonly revision: number;
  readonly by: string;
  readonly at: string;
  readonly reason?: string;
  readonly digest: string;
  readonly approvedBy?: string;
  readonly changes: readonly string[];
}

/** One implementation attempt of a code-agent step, with its validation and rollback. */
export interface AttemptEntry {
  readonly stepId: string;
  readonly attempt: number;
  readonly implementationRunId: string;
  readonly status: AttemptEndRecord['status'];
  readonly error?: string;
  readonly changes: AttemptEndRecord['changes'];
  readonly rolledBack: boolean;
  readonly validation?: Omit<ValidationEndRecord, 'runId' | 'seq' | 'type'>;
  readonly rollback?: Pick<WorkspaceRollbackRecord, 'restored' | 'removed' | 'at'>;
}

/** "+ check", "− old", "~ build (args)", "↕ ship": one change of a revision. */
export function describeChange(change: PlanChange): string {
  switch (change.kind) {
    case 'step-added':
      return `+ ${change.stepId}`;
    case 'step-removed':
      return `− ${change.stepId}`;
    case 'step-changed':
      return `~ ${change.stepId} (${change.fields.join(', ')})`;
    case 'step-moved':
      return `↕ ${change.stepId}`;
    default:
      return `plan ${change.fields.join(', ')}`;
  }
}

export function revisionHistory(revisions: readonly PlanReviseEvent[]): RevisionEntry[] {
  return revisions.map((event) => ({
    revision: event.revision,
    by: event.by,
    at: event.at,
    ...(event.reason === undefined ? {} : { reason: event.reason }),
    digest: event.digest,
    ...(event.authorization ? { approvedBy: event.authorization.by } : {}),
    changes: event.diff.map(describeChange),
  }));
}

/** The attempts a code-agent run journaled (`attempt-end`), each with its `validation-end` and `workspace-rollback`. */
export function attemptHistory(events: readonly RunEvent[]): AttemptEntry[] {
  const key = (stepId: string, attempt: number) => `${stepId}\u0000${attempt}`;
  const validations = new Map<string, ValidationEndRecord>();
  const rollbacks = new Map<string, WorkspaceRollbackRecord>();
  const entries: AttemptEntry[] = [];
  for (const event of events as readonly HistoryEvent[]) {
    if (event.type === 'validation-end') {
      // Several commands per attempt: the one shown decides it (the first mandatory one that failed, else the first mandatory one).
      const shown = validations.get(key(event.stepId, event.attempt));
      const decides = (candidate: ValidationEndRecord) => !candidate.passed && !candidate.optional;
      if (!shown || (!decides(shown) && (decides(event) || (shown.optional && !event.optional)))) {
        validations.set(key(event.stepId, event.attempt), event);
      }
    } else if (event.type === 'workspace-rollback') rollbacks.set(key(event.stepId, event.attempt), event);
    else if (event.type === 'attempt-end') {
      const {
        runId: _runId,
        seq: _seq,
        type: _type,
        ...validation
      } = validations.get(key(event.stepId, event.attempt)) ?? ({} as Partial<ValidationEndRecord>);
      const rollback = rollbacks.get(key(event.stepId, event.attempt));
      entries.push({
        stepId: event.stepId,
        attempt: event.attempt,
        implementationRunId: event.implementationRunId,
        status: event.status,
        ...(event.error === undefined ? {} : { error: event.error }),
        changes: event.changes,
        rolledBack: event.rolledBack,
        ...(validation.command ? { validation: validation as AttemptEntry['validation'] } : {}),
        ...(rollback ? { rollback: { restored: rollback.restored, removed: rollback.removed, at: rollback.at } } : {}),
      });
    }
  }
  return entries;
}

/** "node --test failed (exit 1), 2 failing" / "node --test passed". */
export function describeValidation(validation: NonNullable<AttemptEntry['validation']>): string {
  const command = validation.command.join(' ');
  if (validation.passed) return `${command} passed`;
  const how = validation.exitCode === null ? (validation.error ?? 'did not exit') : `exit ${validation.exitCode}`;
  const failing = validation.failingTests.length;
  return `${command} failed (${how})${failing > 0 ? `, ${failing} failing` : ''}`;
}

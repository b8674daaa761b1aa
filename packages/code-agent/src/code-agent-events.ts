import type { RunEventBase } from '@stepwise/core';

// The code agent's events. Core does not fold them: they are extension events, registered below in
// core's `RunEventExtensions`, so they type-check wherever `RunEvent` is used once this package is
// imported. Each belongs to one attempt of one step: the scheduler's (stepId, attempt) is unique in a
// run, across revisions too (a replanned step gets a new id); `revision` says which revision of the
// plan the attempt ran under.

/** Files an implementation attempt of the code agent changed in the workspace. */
export interface WorkspaceChangeList {
  readonly created: readonly string[];
  readonly modified: readonly string[];
  readonly deleted: readonly string[];
}

/** A failing test named in a validation command's output. */
export interface FailingTestRecord {
  readonly name: string;
  readonly file?: string;
  /** The test's own lines of the output (trimmed). */
  readonly output: string;
}

/**
 * One implementation attempt of a code-agent step ended: the child run that carried it
 * out and what it changed. The validation and any rollback are journaled just before it.
 */
export interface AttemptEndEvent extends RunEventBase {
  readonly type: 'attempt-end';
  readonly stepId: string;
  readonly attempt: number;
  /** The plan revision the attempt ran under (absent in journals written before it was recorded: 0). */
  readonly revision?: number;
  /** The child run that implemented the step. */
  readonly implementationRunId: string;
  /** The implementation step's own outcome (the validation decides whether the attempt stands). */
  readonly status: 'succeeded' | 'failed';
  readonly error?: string;
  readonly changes: WorkspaceChangeList;
  /** The attempt's changes were undone. */
  readonly rolledBack: boolean;
}

/** The validation command ran after an implementation attempt. */
export interface ValidationEndEvent extends RunEventBase {
  readonly type: 'validation-end';
  readonly stepId: string;
  readonly attempt: number;
  readonly revision?: number;
  /** The command's name in the configuration's `validation` section (e.g. `test`). */
  readonly name?: string;
  /** An optional command's failure does not fail the attempt. */
  readonly optional?: boolean;
  /** The child run that journaled the command as a tool call. */
  readonly validationRunId: string;
  readonly command: readonly string[];
  /** `null` when the command did not run to an exit (not found, timed out, killed). */
  readonly exitCode: number | null;
  readonly passed: boolean;
  readonly failingTests: readonly FailingTestRecord[];
  /** stdout then stderr, as captured (large outputs are stored once, by hash). */
  readonly output: string;
  readonly error?: string;
}

/** A failed attempt's changes were undone from the checkpoint taken before it. */
export interface WorkspaceRollbackEvent extends RunEventBase {
  readonly type: 'workspace-rollback';
  readonly stepId: string;
  readonly attempt: number;
  readonly revision?: number;
  /** Files written back as they were (modified or deleted by the attempt). */
  readonly restored: readonly string[];
  /** Files the attempt created, deleted again. */
  readonly removed: readonly string[];
}

/**
 * The workspace was recorded before an attempt, and the record saved in `directory`, so a
 * process that resumes the run after a crash can still undo the attempt.
 */
export interface WorkspaceCheckpointEvent extends RunEventBase {
  readonly type: 'workspace-checkpoint';
  readonly stepId: string;
  readonly attempt: number;
  readonly revision?: number;
  readonly directory: string;
  /** Files, directories and symlinks recorded. */
  readonly entries: number;
  readonly bytes: number;
  /** Names left out at any depth (never recorded nor restored). */
  readonly exclude: readonly string[];
}

/** The code agent's events, by type (registered in `RunEventExtensions`). */
export interface CodeAgentEvents {
  readonly 'workspace-checkpoint': WorkspaceCheckpointEvent;
  readonly 'attempt-end': AttemptEndEvent;
  readonly 'validation-end': ValidationEndEvent;
  readonly 'workspace-rollback': WorkspaceRollbackEvent;
}

// Registers the events: `RunEvent` includes them wherever this package's types are loaded.
declare module '@stepwise/core' {
  interface RunEventExtensions extends CodeAgentEvents {}
}

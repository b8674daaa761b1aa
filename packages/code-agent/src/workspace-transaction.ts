import { rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { GoalStepRequest } from '@stepwise/core/engine';
import {
  createCheckpoint,
  openCheckpoint,
  type WorkspaceCheckpoint,
  type WorkspaceSandbox,
} from '@stepwise/tools-node';
import type { WorkspaceChangeList, WorkspaceCheckpointEvent } from './code-agent-events.js';

/**
 * Left out of the checkpoints by default, at any depth: dependencies (`node_modules`), and
 * `.stepwise`, where the command line keeps its journal and the checkpoints themselves (restoring a
 * database that is being written would corrupt it). `.git` is never included. Everything else is
 * recorded, files `.gitignore` ignores included.
 */
export const DEFAULT_CHECKPOINT_EXCLUDE: readonly string[] = ['node_modules', '.stepwise'];

/** Where and what the checkpoints of a code-agent run record. */
export interface TransactionSettings {
  /** The sandbox the tools use: protected paths are never recorded nor restored. */
  readonly sandbox: WorkspaceSandbox;
  /** Directory the checkpoints are saved in, one subdirectory per run and attempt. */
  readonly directory: string;
  /** Names left out at any depth. */
  readonly exclude: readonly string[];
  /** Workspace paths recorded. Default the whole workspace. */
  readonly paths?: readonly string[];
  readonly maxBytes?: number;
  readonly maxEntries?: number;
}

/**
 * One attempt's workspace transaction: the checkpoint is taken and saved on disk before the attempt
 * changes anything, journaled (`workspace-checkpoint`, durable before the model starts), and can be
 * reopened by another process to compare with or restore after a crash.
 */
export class WorkspaceTransaction {
  readonly #checkpoint: WorkspaceCheckpoint;
  readonly #directory: string;

  private constructor(checkpoint: WorkspaceCheckpoint, directory: string) {
    this.#checkpoint = checkpoint;
    this.#directory = directory;
  }

  /** Records the workspace, saves the record and journals where it is. */
  static async begin(settings: TransactionSettings, request: GoalStepRequest): Promise<WorkspaceTransaction> {
    const { kernel, step, attempt } = request;
    const directory = path.join(settings.directory, kernel.runId, `${step.id}.${attempt}`);
    const checkpoint = await createCheckpoint({
      workspace: settings.sandbox,
      exclude: settings.exclude,
      gitignore: false,
      ...(settings.paths ? { paths: settings.paths } : {}),
      ...(settings.maxBytes === undefined ? {} : { maxBytes: settings.maxBytes }),
      ...(settings.maxEntries === undefined ? {} : { maxEntries: settings.maxEntries }),
    });
    await checkpoint.save(directory);
    await kernel.journal.record({
      type: 'workspace-checkpoint',
      stepId: step.id,
      attempt,
      revision: request.plan.revision ?? 0,
      directory,
      entries: checkpoint.entries,
      bytes: checkpoint.bytes,
      exclude: [...settings.exclude],
    });
    return new WorkspaceTransaction(checkpoint, directory);
  }

  /** The transaction a journaled checkpoint saved (a process that resumes the run after a crash). */
  static async reopen(
    settings: TransactionSettings,
    journaled: WorkspaceCheckpointEvent,
  ): Promise<WorkspaceTransaction> {
    const checkpoint = await openCheckpoint(journaled.directory, {
      workspace: settings.sandbox,
      exclude: journaled.exclude,
      gitignore: false,
      ...(settings.paths ? { paths: settings.paths } : {}),
    });
    return new WorkspaceTransaction(checkpoint, journaled.directory);
  }

  changes(): Promise<WorkspaceChangeList> {
    return this.#checkpoint.changes();
  }

  /** Puts the workspace back as it was before the attempt; returns what it changed. */
  rollback(): Promise<WorkspaceChangeList> {
    return this.#checkpoint.restore();
  }

  /** The attempt is settled (kept or rolled back): its saved checkpoint is no longer needed. */
  async close(): Promise<void> {
    await rm(this.#directory, { recursive: true, force: true });
    // The run's directory goes once its last attempt closed (rmdir fails while others remain).
    await rmdir(path.dirname(this.#directory)).catch(() => undefined);
  }
}

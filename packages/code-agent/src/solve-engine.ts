import path from 'node:path';
import type { AnyTool, ApprovalOptions, JournalKey, RunEvent, RunStore } from '@stepwise/core';
import { ToolRegistry } from '@stepwise/core';
import {
  createPolicyEngine,
  journaledPolicy,
  type PolicyEngine,
  permissivePolicy,
  policyFromJournal,
} from '@stepwise/core/engine';
import type { AgenticLimits } from '@stepwise/engine-agentic';
import { nodeTools, WorkspaceSandbox } from '@stepwise/tools-node';
import { type AttemptReport, codeAgentAttempt } from './code-agent-attempt.js';
import { type AgenticModule, type ChatModel, planTaskTool } from './plan-task-tool.js';
import type { ValidationCommand } from './run-validation.js';
import { solveAdjust } from './solve-adjust.js';
import { DEFAULT_CHECKPOINT_EXCLUDE } from './workspace-transaction.js';

/** The engine name of a code-agent run in the journal (`stepwise resume` and `show` know it). */
export const SOLVE_ENGINE = 'solve';

/** What a code-agent run journals with `run-start`, so a resume carries on under the same settings. */
export interface JournaledSolve {
  readonly task: string;
  readonly validation: readonly ValidationCommand[];
  readonly exclude: readonly string[];
  readonly checkpointDirectory: string;
  readonly maxReplans: number;
  readonly validateTimeoutMs: number;
  /** Who adjusts the plan after a validated step: `rules` (continue) or the `model`. */
  readonly adjust?: 'rules' | 'model';
}

/** Where the checkpoint of each attempt is recorded. */
export interface SolveCheckpointOptions {
  /**
   * Names (of directories or files) left out at any depth: neither recorded nor restored. Default
   * `DEFAULT_CHECKPOINT_EXCLUDE` (`node_modules`, `.stepwise`). Ignored files are recorded otherwise.
   */
  readonly exclude?: readonly string[];
  /** Workspace paths recorded. Default the whole workspace. */
  readonly paths?: readonly string[];
  /** Caps of one checkpoint (E311 beyond). Default 64 MiB and 20,000 entries. */
  readonly maxBytes?: number;
  readonly maxEntries?: number;
  /** Where checkpoints are saved until their attempt is settled. Default `<workspace>/.stepwise/checkpoints`. */
  readonly directory?: string;
}

/** What building the code agent's engine needs: the same for a new run and a resumed one. */
export interface SolveEngineOptions {
  readonly agentic: AgenticModule;
  readonly model: ChatModel;
  readonly workspace: string;
  readonly store: RunStore;
  readonly settings: JournaledSolve;
  readonly maxAttempts: number;
  readonly maxRepairs?: number;
  readonly allowCommands: readonly string[];
  readonly checkpoint?: Omit<SolveCheckpointOptions, 'exclude' | 'directory'>;
  readonly limits?: AgenticLimits;
  readonly approvals?: ApprovalOptions;
  readonly tools?: readonly AnyTool[];
  readonly protectedPaths?: readonly string[];
  readonly journalKey?: JournalKey;
  readonly leaseTtlMs?: number;
  readonly onEvent?: (event: RunEvent) => void;
  readonly onAttemptStart?: (stepId: string, attempt: number) => void;
  readonly onAttemptEnd?: (attempt: AttemptReport, runId: string) => void;
}

/** The checkpoint settings a new run journals. */
export function checkpointSettings(workspace: string, checkpoint: SolveCheckpointOptions | undefined) {
  return {
    exclude: [...(checkpoint?.exclude ?? DEFAULT_CHECKPOINT_EXCLUDE)],
    checkpointDirectory: path.resolve(checkpoint?.directory ?? path.join(workspace, '.stepwise', 'checkpoints')),
  };
}

/** The tools implementation steps use (the Node tools, confined to the workspace, and the host's own). */
export async function implementationTools(
  options: Pick<SolveEngineOptions, 'workspace' | 'tools' | 'protectedPaths' | 'allowCommands'>,
): Promise<ToolRegistry> {
  const protectedPaths = options.protectedPaths ? { protectedPaths: options.protectedPaths } : {};
  const root = await new WorkspaceSandbox({ root: options.workspace, ...protectedPaths }).realRoot();
  const implementation = new ToolRegistry(options.tools ?? []);
  await implementation.use(
    nodeTools({ workspace: root, ...protectedPaths, commands: { allow: [...options.allowCommands] } }),
  );
  return implementation;
}

async function registries(options: SolveEngineOptions) {
  const implementation = await implementationTools(options);
  const validation = options.settings.validation.map((each) => `${each.name}: ${each.command.join(' ')}`);
  const all = new ToolRegistry([
    ...implementation.list(),
    planTaskTool({
      agentic: options.agentic,
      model: options.model,
      tools: () => implementation,
      validation,
      ...(options.maxRepairs === undefined ? {} : { maxRepairs: options.maxRepairs }),
    }),
  ]);
  return { implementation, all, validation };
}

/**
 * The code agent as an engine on the one scheduler: the permissive policy (dependency order, one
 * step at a time, independent steps go on after a failure) named `solve`, whose goal steps are the
 * model loop wrapped in a workspace transaction and the validation (`codeAgentAttempt`), retried
 * up to `maxAttempts` by the scheduler, with `solveAdjust` after every step.
 */
export async function solveEngine(options: SolveEngineOptions): Promise<PolicyEngine> {
  const { settings } = options;
  const protectedPaths = options.protectedPaths ? { protectedPaths: options.protectedPaths } : {};
  // The checkpoints walk this sandbox too: protected files are never recorded nor restored.
  const sandbox = new WorkspaceSandbox({ root: options.workspace, ...protectedPaths });
  const root = await sandbox.realRoot();
  const { implementation, all, validation } = await registries(options);
  const attempt = codeAgentAttempt({
    store: options.store,
    transaction: { sandbox, directory: settings.checkpointDirectory, exclude: settings.exclude, ...options.checkpoint },
    validation: settings.validation,
    validateTimeoutMs: settings.validateTimeoutMs,
    task: settings.task,
    ...(options.onAttemptStart ? { onAttemptStart: options.onAttemptStart } : {}),
    ...(options.onAttemptEnd ? { onAttemptEnd: options.onAttemptEnd } : {}),
  });
  const permissive = permissivePolicy(
    {
      tools: all,
      concurrency: 1,
      retry: { maxAttempts: options.maxAttempts, initialDelayMs: 0 },
      adjust: solveAdjust({
        agentic: options.agentic,
        model: options.model,
        store: options.store,
        tools: implementation,
        validation,
        maxReplans: settings.maxReplans,
        ...(settings.adjust ? { adjust: settings.adjust } : {}),
        ...(options.maxRepairs === undefined ? {} : { maxRepairs: options.maxRepairs }),
      }),
      goalSteps: options.agentic.goalStepExecutor({
        model: options.model,
        ...(options.limits ? { limits: options.limits } : {}),
        attempt,
      }),
    },
    { name: SOLVE_ENGINE, validation: 'agentic' },
  );
  // A step that does not set `critical` is not: its failure skips its dependents, the others go on.
  const policy = { ...permissive, critical: false };
  return createPolicyEngine({
    policy,
    options: {
      tools: all,
      store: options.store,
      workspace: root,
      approvals: options.approvals ?? { policy: { tools: { run_command: 'auto' } } },
      ...(options.journalKey === undefined ? {} : { journalKey: options.journalKey }),
      ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    },
    journaledOptions: { ...journaledPolicy(policy), solve: settings },
    policyFromJournal: (journaled) => policyFromJournal(journaled, policy),
  });
}

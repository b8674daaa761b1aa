import path from 'node:path';
import type { ApprovalHandler, ApprovalPolicy, Effect } from '@stepwise/core';
import type { StepwiseConfig } from './config-schema.js';
import { defaultDatabasePath, type EngineName, type RunnerOptions } from './create-runner.js';
import type { LoadedConfig } from './load-config.js';

/** What the command line can override (flags win over the file). */
export interface ConfigOverrides {
  readonly engine?: EngineName;
  /** Relative to `cwd`. */
  readonly workspace?: string;
  /** Relative to `cwd`. */
  readonly database?: string;
  readonly concurrency?: number;
  /** Asks a person; without one the non-interactive fallback applies. */
  readonly approvalHandler?: ApprovalHandler;
  /** Replaces the configured fallback (`--approve auto|deny` without a TTY). */
  readonly nonInteractive?: 'auto' | 'deny' | 'pause';
  readonly cwd?: string;
}

const EFFECTS: readonly Effect[] = ['read', 'write', 'exec', 'destructive', 'network'];

/** The core approval policy a configuration's `approvals` section describes. */
export function approvalPolicyFromConfig(approvals: StepwiseConfig['approvals']): ApprovalPolicy {
  const effects: Partial<Record<Effect, 'auto' | 'prompt' | 'deny' | 'pause'>> = {};
  for (const effect of EFFECTS) {
    const mode = approvals?.[effect];
    if (mode) effects[effect] = mode;
  }
  return {
    effects,
    ...(approvals?.tools ? { tools: approvals.tools } : {}),
    ...(approvals?.nonInteractive ? { nonInteractive: approvals.nonInteractive } : {}),
  };
}

/**
 * The host's files, out of every tool's reach: the journal (also when a command passes its store
 * object) and the configuration; createRunner adds the local plugin files. The trust store only
 * when it lies in the workspace: elsewhere the OS sandbox hides it with the home directory, and a
 * protected file would be shown read-only.
 */
function hostFiles(loaded: LoadedConfig, workspace: string, database: string | undefined): string[] {
  const trustStore = loaded.trustStore;
  const inWorkspace = trustStore !== undefined && !path.relative(workspace, trustStore).startsWith('..');
  return [
    ...(database ? [database] : []),
    ...(loaded.file ? [loaded.file] : []),
    ...(trustStore && inWorkspace ? [trustStore] : []),
  ];
}

/** `createRunner` options (plus the resolved database path) from a loaded configuration and flags. */
export function runnerOptionsFromConfig(
  loaded: LoadedConfig,
  overrides: ConfigOverrides = {},
): RunnerOptions & {
  readonly engine: EngineName;
  readonly workspace: string;
  readonly database: string;
  readonly protectedPaths: readonly string[];
} {
  const { config, directory } = loaded;
  const cwd = path.resolve(overrides.cwd ?? process.cwd());
  const workspace = overrides.workspace
    ? path.resolve(cwd, overrides.workspace)
    : path.resolve(directory, config.workspace ?? '.');
  const database = overrides.database
    ? path.resolve(cwd, overrides.database)
    : config.database
      ? path.resolve(directory, config.database)
      : defaultDatabasePath(workspace);
  const policy = approvalPolicyFromConfig(config.approvals);
  const store = config.store && !overrides.database ? config.store : { path: database };
  return {
    engine: overrides.engine ?? config.engine ?? 'dag',
    workspace,
    database,
    baseDirectory: directory,
    store,
    protectedPaths: hostFiles(loaded, workspace, 'path' in store ? database : undefined),
    approvals: {
      policy: overrides.nonInteractive ? { ...policy, nonInteractive: overrides.nonInteractive } : policy,
      ...(overrides.approvalHandler ? { handler: overrides.approvalHandler } : {}),
    },
    ...(config.commands ? { commands: config.commands } : {}),
    ...((overrides.concurrency ?? config.concurrency) === undefined
      ? {}
      : { concurrency: overrides.concurrency ?? config.concurrency }),
    ...(config.retry ? { retry: config.retry } : {}),
    ...(config.timeoutMs === undefined ? {} : { defaultTimeoutMs: config.timeoutMs }),
    ...(config.leaseTtlMs === undefined ? {} : { leaseTtlMs: config.leaseTtlMs }),
    ...(config.durability === undefined ? {} : { durability: config.durability }),
    ...(config.retainOutputs === undefined ? {} : { retainOutputs: config.retainOutputs }),
    ...(config.allowRerunInterrupted === undefined ? {} : { allowRerunInterrupted: config.allowRerunInterrupted }),
    ...(config.secretEnv ? { secretEnv: config.secretEnv } : {}),
    ...(config.model ? { model: config.model } : {}),
    ...(config.agentic ? { agentic: config.agentic } : {}),
    ...(config.plugins ? { plugins: config.plugins } : {}),
  };
}

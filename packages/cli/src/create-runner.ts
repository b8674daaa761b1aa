import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  type ApprovalOptions,
  createRedactor,
  type Durability,
  type Engine,
  type EngineOptions,
  ErrorCodes,
  type JournalKey,
  MemoryStore,
  type PlanValidation,
  type Redactor,
  type ResumeOptions,
  type RetainOutputs,
  type RetryPolicy,
  type RunEvent,
  type RunHandle,
  type RunOptions,
  type RunStore,
  StepwiseError,
  ToolRegistry,
} from '@stepwise/core';
import { importOptionalPackage } from './import-optional-package.js';
import { userJournalKey } from './journal-key.js';
import { localPluginFiles, type PluginSource, registerPlugins } from './load-plugins.js';

/** The engines `createRunner` switches between with one word. */
export type EngineName = 'sequential' | 'dag' | 'agentic';

/** An OpenAI-compatible endpoint for the agentic engine. */
export interface ModelEndpoint {
  readonly baseURL: string;
  readonly model: string;
  /** The key itself (programmatic use). Prefer `apiKeyEnv`. */
  readonly apiKey?: string;
  /** Name of the environment variable holding the key; its value is also redacted from the journal. */
  readonly apiKeyEnv?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Limits of the agentic engine's loop, handed to `agenticEngine({ limits })`. Declared here, not
 * imported, so the types of `@stepwise/cli` do not need `@stepwise/engine-agentic` (an optional peer).
 */
export interface AgenticLimits {
  /** Model turns per step; a step's `maxTurns` wins. Then the step fails with E403. Default 10. */
  readonly maxTurns?: number;
  /** Tool calls in a row without an analysis; then the model must analyse before calling more. Default 5. */
  readonly maxConsecutiveToolCalls?: number;
  /** Failed tool calls (errors, denials, bad arguments) per step; then the step fails with E404. Default 3. */
  readonly maxToolFailures?: number;
  /** Tokens (prompt + completion, all turns) a step may spend; then it fails with E405. Default: no limit. */
  readonly tokenBudget?: number;
  /** Prompt budget per model call (messages + tool definitions); the sliding window keeps within it. Default 16 000. */
  readonly maxContextTokens?: number;
  /** Longer tool results are cut head + tail with a `[truncated N tokens]` marker. Default 2 000. */
  readonly maxToolResultTokens?: number;
  /** BLOCKED: `fail` the step (E406), or `ask` a person (the run ends `waiting`; `stepwise respond --answer`). Default `fail`. */
  readonly onBlocked?: 'fail' | 'ask';
  /** Turn and tool-failure limits: `fail` (E403, E404), or `ask` a person whether the step may go on. Default `fail`. */
  readonly onLimit?: 'fail' | 'ask';
}

/** Splits the `agentic` settings into the loop's limits and its ask policy. */
function agenticLoopOptions(agentic: AgenticLimits | undefined): Record<string, unknown> {
  if (!agentic) return {};
  const { onBlocked, onLimit, ...limits } = agentic;
  return {
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
    ...(onBlocked ? { onBlocked } : {}),
    ...(onLimit ? { onLimit } : {}),
  };
}

/** Loads `@stepwise/engine-agentic` (an optional peer): E601 naming it when it is not installed. */
export const loadAgenticEngine = (purpose = 'the agentic engine', location = '/engine') =>
  importOptionalPackage('@stepwise/engine-agentic', purpose, location, () => import('@stepwise/engine-agentic'));

/** Loads `@stepwise/store-postgres` (an optional peer): E601 naming it when it is not installed. */
export const loadPostgresStore = () =>
  importOptionalPackage(
    '@stepwise/store-postgres',
    'the Postgres store',
    '/store',
    () => import('@stepwise/store-postgres'),
  );

export interface RunnerOptions {
  /** `sequential` (strict: approved plans, stop at first failure), `dag` (permissive, parallel) or `agentic`. Default `dag`. */
  readonly engine?: EngineName;
  /**
   * The whitelist: a ready `ToolRegistry`, or plugins to register into a new one.
   * Default: a registry with `nodeTools({ workspace, commands })` from `@stepwise/tools-node`.
   */
  readonly tools?: ToolRegistry | readonly PluginSource[];
  /** More plugins, registered after `tools` (module specifiers, `{ mcp }` servers, plugin objects). Default none. */
  readonly plugins?: readonly PluginSource[];
  /** Where relative plugin specifiers and MCP `cwd`s resolve. Default `workspace`. */
  readonly baseDirectory?: string;
  /**
   * The journal: a `RunStore`, `{ path }` for a SQLite file (`@stepwise/store-sqlite`), or `'memory'`.
   * Default: SQLite at `<workspace>/.stepwise/stepwise.db`.
   */
  readonly store?: RunStore | { readonly path: string } | PostgresStoreConfig | 'memory';
  /** The directory tools may touch (absolute, or relative to the current directory). Default `process.cwd()`. */
  readonly workspace?: string;
  /** Approval policy per effect/tool, the non-interactive fallback, and the handler that asks a person. Default: core defaults, no handler. */
  readonly approvals?: ApprovalOptions;
  /**
   * `run_command` settings for the default `nodeTools`: the executable allowlist (default: none, every
   * command refused), inherited environment names, `allowNpx`, `allowNodeEval`, timeouts, output caps.
   */
  readonly commands?: {
    readonly allow?: readonly string[];
    /** Environment variable names (or `PREFIX_*`) commands inherit. */
    readonly env?: readonly string[];
    readonly allowNpx?: boolean;
    readonly allowNodeEval?: boolean;
    readonly timeoutMs?: number;
    readonly maxOutputBytes?: number;
    /** The OS sandbox: `required` refuses commands where bubblewrap cannot start. Default `available`. */
    readonly sandbox?: 'required' | 'available' | 'off';
    /** Let sandboxed commands reach the network. Default false. */
    readonly network?: boolean;
    /** The per-executable argument rules; `false` needs `sandbox: 'required'` or `unsafeNoBoundary` (E601). Default true. */
    readonly checkArguments?: boolean;
    /** Accept that `checkArguments: false` without `sandbox: 'required'` may run commands with no boundary. Default false. */
    readonly unsafeNoBoundary?: boolean;
  };
  /**
   * Files and directories no tool may touch and the OS sandbox hides or shows read-only (commands,
   * stdio MCP servers): the host's, not the plan's. Always added: the SQLite store's file (`store:
   * { path }`) and every local plugin file; `@stepwise/tools-node` adds `.stepwise/` and
   * `stepwise.config.*` at the workspace root. Default none.
   */
  readonly protectedPaths?: readonly string[];
  /** Steps at once: dag default 4, agentic default 1 (its steps share the workspace). Ignored by sequential. */
  readonly concurrency?: number;
  /** Retry policy for steps that set none (dag). Default: the engine's (3 attempts, 1 s, ×2). */
  readonly retry?: Partial<RetryPolicy>;
  /** The agentic engine's model: an OpenAI-compatible endpoint or any `ChatModel` object. Required for `agentic`. */
  readonly model?: ModelEndpoint | object;
  /** Agentic loop limits. Default: the engine's (10 turns, 5 consecutive calls, 3 tool failures). */
  readonly agentic?: AgenticLimits;
  /** Timeout for steps and tools that set none, in ms. Default none. */
  readonly defaultTimeoutMs?: number;
  /** Lease time-to-live: how long a crashed process keeps its run locked. Default 30 000 ms. */
  readonly leaseTtlMs?: number;
  /**
   * Keys every run's hash chain (HMAC-SHA-256; at least 16 bytes), so that a process that can
   * write the journal but not read the key cannot forge a run that verifies; resume, `show`, the
   * report and `stepwise verify` check runs with it (E507). `false`: no key (plain SHA-256).
   * Default: the key of the user running the process, `~/.config/stepwise/journal.key` (created on
   * first use; `stepwise` uses the same file); none for `store: 'memory'`.
   */
  readonly journalKey?: JournalKey | false;
  /** `batched`: the ends of idempotent steps share commits; a crash can run them again. Default `step`. */
  readonly durability?: Durability;
  /** `referenced`: a step's output stays in memory only while a pending step references it. Default `all`. */
  readonly retainOutputs?: RetainOutputs;
  /** Re-run in-flight non-idempotent steps on resume instead of failing them. Default false. */
  readonly allowRerunInterrupted?: boolean;
  /** Environment variable names whose values are redacted everywhere. Default none (the model key is added). */
  readonly secretEnv?: readonly string[];
  /** Replaces the redactor built from `secretEnv`. */
  readonly redactor?: Redactor;
  /** Every event of every run, after it is durable. */
  readonly onEvent?: (event: RunEvent) => void;
  /** Extra options handed to the engine factory as they are (engine-specific knobs). */
  readonly engineOptions?: Readonly<Record<string, unknown>>;
}

/** A Postgres journal shared by workers (`@stepwise/store-postgres`). */
export interface PostgresStoreConfig {
  readonly kind: 'postgres';
  /** `postgres://user:password@host:port/database` */
  readonly url: string;
  /** Postgres schema of the tables. Default `stepwise`. */
  readonly schema?: string;
}

/** One engine, its tools and its store, behind the same four calls whatever the engine. */
export interface Runner {
  readonly engineName: EngineName;
  readonly engine: Engine;
  readonly tools: ToolRegistry;
  readonly store: RunStore;
  /** The key of the runs' hash chains (see `RunnerOptions.journalKey`): hand it to `respond`, `verifyRun`, the dashboard. */
  readonly journalKey: JournalKey | undefined;
  /** Absolute workspace root. */
  readonly workspace: string;
  /** Starts a run. The sequential engine needs `authorization` (E002 without one). */
  run(plan: unknown, options?: RunOptions): RunHandle;
  /** Continues a run whose process died; takes its lease (E501 while another process holds it). A run that ended returns its recorded result. */
  resume(runId: string, options?: ResumeOptions): RunHandle;
  /** Every problem of a plan for this engine and these tools. */
  validate(plan: unknown): PlanValidation;
  /** Disposes the plugins (stops MCP servers) and closes the store. Idempotent. */
  close(): Promise<void>;
}

function isRunStore(value: unknown): value is RunStore {
  return typeof value === 'object' && value !== null && typeof (value as RunStore).append === 'function';
}

/** `<workspace>/.stepwise/stepwise.db`: where the CLI and `createRunner` keep the journal by default. */
export function defaultDatabasePath(workspace: string): string {
  return path.join(workspace, '.stepwise', 'stepwise.db');
}

export function isPostgresStoreConfig(value: unknown): value is PostgresStoreConfig {
  return typeof value === 'object' && value !== null && (value as PostgresStoreConfig).kind === 'postgres';
}

/** The store's refusal of its options (E601 at `connectionString`, `schema`), named as the configuration spells them. */
function configuredAs(error: unknown): unknown {
  if (!StepwiseError.isInstance(error) || error.code !== ErrorCodes.CONFIG_INVALID) return error;
  const field = error.location === 'connectionString' ? 'url' : error.location === 'schema' ? 'schema' : undefined;
  if (field === undefined) return error;
  const message = error.message.replace(/^connectionString\b/, '').trim();
  return new StepwiseError(ErrorCodes.CONFIG_INVALID, `store.${field} in the configuration: ${message}`, {
    location: `/store/${field}`,
    cause: error,
  });
}

/** Opens the Postgres store (migrating its schema on first use). */
export async function openPostgresStore(config: PostgresStoreConfig): Promise<RunStore> {
  const { createPostgresStore } = await loadPostgresStore();
  let store: ReturnType<typeof createPostgresStore>;
  try {
    store = createPostgresStore({ connectionString: config.url, ...(config.schema ? { schema: config.schema } : {}) });
  } catch (error) {
    throw configuredAs(error);
  }
  try {
    await store.ready;
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}

/** Opens the SQLite store at `file` (creating its directory). */
export async function openSqliteStore(file: string): Promise<RunStore> {
  try {
    await mkdir(path.dirname(file), { recursive: true });
  } catch (error) {
    throw new StepwiseError(
      ErrorCodes.STORE_UNAVAILABLE,
      `cannot create the directory of the journal ${file}: ${(error as Error).message}`,
      { location: file, cause: error },
    );
  }
  const { createSqliteStore } = await import('@stepwise/store-sqlite');
  const store = createSqliteStore({ path: file });
  try {
    // Migrations run on open: a corrupt or newer database fails here, with the file named.
    await store.ready;
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}

/** `openAICompatible` of `@stepwise/engine-agentic`: a ChatModel of an OpenAI-compatible endpoint. */
export type OpenAICompatible = (endpoint: Pick<ModelEndpoint, 'baseURL' | 'model' | 'apiKey' | 'headers'>) => object;

/**
 * The ChatModel a configured endpoint describes (an object that is already a model is returned as is).
 * `openAICompatible` is the code agent's for `stepwise solve` and `stepwise plan` (its dependency,
 * wherever npm put it); the engines load `@stepwise/engine-agentic` themselves.
 */
export async function createModel(
  model: RunnerOptions['model'],
  openAICompatible?: OpenAICompatible,
): Promise<object | undefined> {
  if (model === undefined) return undefined;
  const endpoint = model as ModelEndpoint;
  if (typeof endpoint.baseURL !== 'string' || typeof endpoint.model !== 'string') return model;
  const connect =
    openAICompatible ?? (await loadAgenticEngine('an OpenAI-compatible model endpoint', '/model')).openAICompatible;
  const apiKey = endpoint.apiKey ?? (endpoint.apiKeyEnv ? process.env[endpoint.apiKeyEnv] : undefined);
  if (endpoint.apiKeyEnv && !apiKey) {
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `the model's API key variable ${endpoint.apiKeyEnv} is not set in the environment`,
      { location: '/model/apiKeyEnv' },
    );
  }
  return connect({
    baseURL: endpoint.baseURL,
    model: endpoint.model,
    ...(apiKey ? { apiKey } : {}),
    ...(endpoint.headers ? { headers: endpoint.headers } : {}),
  });
}

async function createEngine(name: EngineName, options: EngineOptions & Record<string, unknown>): Promise<Engine> {
  switch (name) {
    case 'sequential': {
      const { sequentialEngine } = await importOptionalPackage(
        '@stepwise/engine-sequential',
        'the sequential engine',
        '/engine',
        () => import('@stepwise/engine-sequential'),
      );
      return sequentialEngine(options);
    }
    case 'dag': {
      const { dagEngine } = await import('@stepwise/engine-dag');
      if (!options.model) return dagEngine(options);
      // With a model, goal steps (no tool) run the model loop under the dag engine too.
      const { goalStepExecutor } = await loadAgenticEngine();
      const loop = {
        model: options.model,
        ...(options.limits ? { limits: options.limits } : {}),
        ...(options.onBlocked ? { onBlocked: options.onBlocked } : {}),
        ...(options.onLimit ? { onLimit: options.onLimit } : {}),
      };
      const goalSteps = goalStepExecutor(loop as unknown as Parameters<typeof goalStepExecutor>[0]);
      return dagEngine({ ...options, goalSteps });
    }
    case 'agentic': {
      const { agenticEngine } = await loadAgenticEngine();
      if (!options.model) {
        throw new StepwiseError(
          ErrorCodes.CONFIG_INVALID,
          'the agentic engine needs a model: set "model" to { baseURL, model, apiKeyEnv } or pass a ChatModel',
          { location: '/model' },
        );
      }
      return agenticEngine(options as unknown as Parameters<typeof agenticEngine>[0]);
    }
    default:
      throw new StepwiseError(
        ErrorCodes.CONFIG_INVALID,
        `unknown engine "${String(name)}": use sequential, dag or agentic`,
        { location: '/engine' },
      );
  }
}

async function checkWorkspace(workspace: string): Promise<void> {
  const isDirectory = await stat(workspace).then(
    (found) => found.isDirectory(),
    () => false,
  );
  if (!isDirectory) {
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `the workspace ${workspace} does not exist or is not a directory`,
      { location: '/workspace' },
    );
  }
}

/** The SQLite file `store` names (its default included), or undefined for other stores. */
function sqliteStorePath(store: RunnerOptions['store'], workspace: string): string | undefined {
  if (store === 'memory' || isRunStore(store) || isPostgresStoreConfig(store)) return undefined;
  return path.resolve(workspace, store?.path ?? defaultDatabasePath(workspace));
}

/** What no tool may touch: the host's protected paths, the SQLite journal and the local plugin files. */
function hostProtectedPaths(options: RunnerOptions, workspace: string, baseDirectory: string): string[] {
  const sources = [...(Array.isArray(options.tools) ? options.tools : []), ...(options.plugins ?? [])];
  const database = sqliteStorePath(options.store, workspace);
  return [
    ...new Set([
      ...(options.protectedPaths ?? []).map((entry) => path.resolve(workspace, entry)),
      ...(database ? [database] : []),
      ...localPluginFiles(sources as readonly PluginSource[], baseDirectory),
    ]),
  ];
}

/** The plugins to register: `tools` (default: the Node tools) then `plugins`. */
async function pluginSources(options: RunnerOptions, workspace: string, protectedPaths: readonly string[]) {
  const sources: PluginSource[] = [];
  if (Array.isArray(options.tools)) sources.push(...(options.tools as readonly PluginSource[]));
  else if (options.tools === undefined) {
    const { nodeTools } = await import('@stepwise/tools-node');
    const { env, allow, network, ...commands } = options.commands ?? {};
    sources.push(
      nodeTools({
        workspace,
        protectedPaths,
        commands: {
          ...commands,
          allow: [...(allow ?? [])],
          ...(env ? { env: { allow: [...env] } } : {}),
          ...(network === undefined ? {} : { sandboxOptions: { network } }),
        },
      }),
    );
  }
  sources.push(...(options.plugins ?? []));
  return sources;
}

async function openStore(options: RunnerOptions, workspace: string): Promise<RunStore> {
  if (options.store === 'memory') return new MemoryStore();
  if (isRunStore(options.store)) return options.store;
  if (isPostgresStoreConfig(options.store)) return openPostgresStore(options.store);
  return openSqliteStore(sqliteStorePath(options.store, workspace) as string);
}

/** The model key's variable and the key itself are redacted with `secretEnv`. */
export function runnerRedactor(options: RunnerOptions): Redactor {
  if (options.redactor) return options.redactor;
  const secretEnv = [...(options.secretEnv ?? [])];
  const apiKeyEnv = (options.model as ModelEndpoint | undefined)?.apiKeyEnv;
  if (apiKeyEnv) secretEnv.push(apiKeyEnv);
  const apiKey = (options.model as ModelEndpoint | undefined)?.apiKey;
  return createRedactor({ secretEnv, ...(apiKey ? { secrets: [apiKey] } : {}) });
}

/** The key `journalKey` names: given, none (`false`), or by default the user's (none for a memory store). */
async function resolveJournalKey(options: RunnerOptions): Promise<JournalKey | undefined> {
  if (options.journalKey === false) return undefined;
  if (options.journalKey !== undefined) return options.journalKey;
  return options.store === 'memory' ? undefined : userJournalKey();
}

interface BuiltParts {
  readonly tools: ToolRegistry;
  readonly store: RunStore;
  readonly workspace: string;
  readonly model: object | undefined;
  readonly journalKey: JournalKey | undefined;
}

function engineOptionsFor(
  options: RunnerOptions,
  engineName: EngineName,
  built: BuiltParts,
): EngineOptions & Record<string, unknown> {
  return {
    ...options.engineOptions,
    tools: built.tools,
    store: built.store,
    workspace: built.workspace,
    redactor: runnerRedactor(options),
    ...(built.journalKey === undefined ? {} : { journalKey: built.journalKey }),
    ...(options.approvals ? { approvals: options.approvals } : {}),
    ...(options.defaultTimeoutMs === undefined ? {} : { defaultTimeoutMs: options.defaultTimeoutMs }),
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
    ...(options.durability === undefined ? {} : { durability: options.durability }),
    ...(options.retainOutputs === undefined ? {} : { retainOutputs: options.retainOutputs }),
    ...(options.allowRerunInterrupted === undefined ? {} : { allowRerunInterrupted: options.allowRerunInterrupted }),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    ...(engineName === 'dag' ? { concurrency: options.concurrency ?? 4 } : {}),
    ...(engineName === 'agentic' && options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    // The agentic engine's own `retry` is for model calls; step retries are the dag engine's.
    ...(options.retry && engineName === 'dag' ? { retry: options.retry } : {}),
    ...(built.model ? { model: built.model } : {}),
    ...(engineName !== 'sequential' ? agenticLoopOptions(options.agentic) : {}),
  };
}

function runnerOf(engineName: EngineName, engine: Engine, built: BuiltParts): Runner {
  const { tools, store } = built;
  let closing: Promise<void> | undefined;
  return {
    engineName,
    engine,
    tools,
    store,
    journalKey: built.journalKey,
    workspace: built.workspace,
    run: (plan, runOptions) => engine.run(plan as Parameters<Engine['run']>[0], runOptions),
    resume: (runId, resumeOptions) => engine.resume(runId, resumeOptions),
    validate: (plan) => engine.validate(plan),
    close() {
      closing ??= (async () => {
        const results = await Promise.allSettled([tools.dispose(), store.close()]);
        const failed = results.find((result) => result.status === 'rejected');
        if (failed) throw failed.reason;
      })();
      return closing;
    },
  };
}

/**
 * Builds a runner: the engine named by `engine`, the tools, the store. Switching between the
 * strict and the permissive engine is a one-word change; plans, tools and store stay the same.
 * Async because plugins (MCP servers) start and the store opens here; failures clean up after
 * themselves and throw typed errors (E601 configuration, E602 plugin, E503 store).
 */
export async function createRunner(options: RunnerOptions = {}): Promise<Runner> {
  const engineName = options.engine ?? 'dag';
  const workspace = path.resolve(options.workspace ?? process.cwd());
  const baseDirectory = path.resolve(options.baseDirectory ?? workspace);
  await checkWorkspace(workspace);
  const ownsRegistry = !(options.tools instanceof ToolRegistry);
  const tools = options.tools instanceof ToolRegistry ? options.tools : new ToolRegistry();
  let store: RunStore | undefined;
  try {
    const protectedPaths = hostProtectedPaths(options, workspace, baseDirectory);
    const sources = await pluginSources(options, workspace, protectedPaths);
    await registerPlugins(tools, sources, baseDirectory, { protectedPaths });
    const journalKey = await resolveJournalKey(options);
    store = await openStore(options, workspace);
    const built = { tools, store, workspace, model: await createModel(options.model), journalKey };
    const engine = await createEngine(engineName, engineOptionsFor(options, engineName, built));
    return runnerOf(engineName, engine, built);
  } catch (error) {
    if (ownsRegistry) await tools.dispose().catch(() => undefined);
    if (store && !isRunStore(options.store)) await store.close().catch(() => undefined);
    throw error;
  }
}

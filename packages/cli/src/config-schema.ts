import { RetryPolicySchema } from '@stepwise/core';
import { z } from 'zod';

const ApprovalModeSchema = z.enum(['auto', 'prompt', 'deny', 'pause']);

/** Approval policy per effect (`auto | prompt | deny | pause`), per tool, and the non-interactive fallback. */
export const ApprovalsConfigSchema = z
  .object({
    read: ApprovalModeSchema.optional(),
    write: ApprovalModeSchema.optional(),
    exec: ApprovalModeSchema.optional(),
    destructive: ApprovalModeSchema.optional(),
    network: ApprovalModeSchema.optional(),
    /** Per tool name; wins over the effect. */
    tools: z.record(z.string(), ApprovalModeSchema).optional(),
    /** What `prompt` becomes with nobody to ask (`--json`, no TTY, CI). Default `deny`; `pause` waits for `stepwise respond`. */
    nonInteractive: z.enum(['auto', 'deny', 'pause']).optional(),
  })
  .strict();

/** `run_command` settings handed to `nodeTools` (see `@stepwise/tools-node`). */
export const CommandsConfigSchema = z
  .object({
    /** Executables `run_command` may start, e.g. `["node", "npm", "git"]`. Default: none. */
    allow: z.array(z.string().min(1)).optional(),
    /** Host environment variables (names or `PREFIX_*`) commands inherit; secrets are never inherited otherwise. */
    env: z.array(z.string().min(1)).optional(),
    /** Let `npx`/`npm exec` download and run packages. Default false. */
    allowNpx: z.boolean().optional(),
    /** Let `node -e`/`--eval` run inline code. Default false. */
    allowNodeEval: z.boolean().optional(),
    /** Default command timeout in ms. Default 120 000. */
    timeoutMs: z.number().int().positive().optional(),
    /** Cap per captured stream, in bytes. Default 1 MiB. */
    maxOutputBytes: z.number().int().positive().optional(),
    /** The OS sandbox (bubblewrap): `required` refuses commands where it cannot start. Default `available`. */
    sandbox: z.enum(['required', 'available', 'off']).optional(),
    /** Let sandboxed commands reach the network. Default false. */
    network: z.boolean().optional(),
    /**
     * The per-executable argument rules. `false` leaves the OS sandbox as the only boundary, so it
     * needs `sandbox: "required"` (or `unsafeNoBoundary: true`). Default true.
     */
    checkArguments: z.boolean().optional(),
    /** Accept that `checkArguments: false` without `sandbox: "required"` may run commands with no boundary at all. Default false. */
    unsafeNoBoundary: z.boolean().optional(),
  })
  .strict()
  .superRefine((commands, ctx) => {
    if (commands.checkArguments !== false || commands.sandbox === 'required' || commands.unsafeNoBoundary === true)
      return;
    ctx.addIssue({
      code: 'custom',
      path: ['checkArguments'],
      message: `"checkArguments": false turns the argument rules off, and with "sandbox": "${commands.sandbox ?? 'available'}" commands would run with no boundary at all wherever the OS sandbox is off or cannot start: set "commands": { "sandbox": "required" }, or "unsafeNoBoundary": true to accept that`,
    });
  });

const ValidationArgvSchema = z.array(z.string().min(1)).min(1);

const ValidationCommandSchema = z
  .object({
    command: ValidationArgvSchema,
    /** Reported, but its failure does not fail the attempt. Default false. */
    optional: z.boolean().optional(),
    timeoutMs: z.number().int().positive().optional(),
  })
  .strict();

/** An OpenAI-compatible endpoint for the agentic engine. The key itself never goes in a file. */
export const ModelConfigSchema = z
  .object({
    baseURL: z.url(),
    model: z.string().min(1),
    /** Name of the environment variable holding the API key (e.g. `OPENAI_API_KEY`). */
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
      .optional(),
    headers: z.record(z.string(), z.string()).optional(),
    /** Refused: a key in a file ends up in version control. */
    apiKey: z
      .never({ error: 'never put an API key in the configuration: name its environment variable with "apiKeyEnv"' })
      .optional(),
  })
  .strict();

const ModulePluginSchema = z
  .object({
    /** Module specifier (package name or path relative to the config file). */
    module: z.string().min(1),
    /** Prefix for every tool name of the plugin, to avoid collisions. */
    prefix: z.string().optional(),
    /** Passed to the module's export when it is a factory function. */
    options: z.unknown().optional(),
  })
  .strict();

const EffectSchema = z.enum(['read', 'write', 'destructive', 'exec', 'network']);

/** Options shared by both MCP transports (see `@stepwise/tools-mcp`). */
const mcpCommon = {
  name: z.string().min(1).optional(),
  effects: z.record(z.string(), EffectSchema).optional(),
  include: z.array(z.string()).optional(),
  timeoutMs: z.number().int().positive().optional(),
  connectTimeoutMs: z.number().int().positive().optional(),
  maxRestarts: z.number().int().min(0).optional(),
};

const pathList = z.array(z.string().min(1)).optional();

/**
 * What the OS sandbox lets a stdio MCP server write, read and reach (see `@stepwise/tools-mcp`).
 * Relative paths resolve against the configuration file's directory. The journal, the
 * configuration file and local plugin files are always added to `protectedPaths`.
 */
const McpSandboxOptionsSchema = z
  .object({
    /** The directory the server may write. Default: its `cwd`. */
    workspace: z.string().min(1).optional(),
    writablePaths: pathList,
    readablePaths: pathList,
    hiddenPaths: pathList,
    protectedPaths: pathList,
    /** Hosts reached through the egress proxy (`api.example.com`, `*.github.com:443`, `localhost:*`). */
    allowHosts: pathList,
    /** The whole network. Default false. */
    network: z.boolean().optional(),
    /** Show the host's git config read-only. Default true. */
    gitConfig: z.boolean().optional(),
  })
  .strict();

const McpServerSchema = z.union([
  z
    .object({
      ...mcpCommon,
      command: z.string().min(1),
      args: z.array(z.string()).optional(),
      env: z.record(z.string(), z.string()).optional(),
      envAllow: z.array(z.string()).optional(),
      /** Relative to the configuration file. Default: its directory. */
      cwd: z.string().optional(),
      stderr: z.enum(['pipe', 'inherit', 'ignore']).optional(),
      /** The OS sandbox around the server: `required`, `available` (default) or `off`. */
      sandbox: z.enum(['required', 'available', 'off']).optional(),
      sandboxOptions: McpSandboxOptionsSchema.optional(),
    })
    .strict(),
  z
    .object({
      ...mcpCommon,
      url: z.url(),
      headers: z.record(z.string(), z.string()).optional(),
    })
    .strict(),
]);

const McpPluginSchema = z
  .object({
    /** A Model Context Protocol server: `{ command, args, env, cwd }` (stdio) or `{ url }` (Streamable HTTP). */
    mcp: z.unknown(),
    prefix: z.string().optional(),
  })
  .strict();

export type ModulePluginConfig = z.infer<typeof ModulePluginSchema>;
export type McpServerConfig = z.infer<typeof McpServerSchema>;
export type McpPluginConfig = { readonly mcp: McpServerConfig; readonly prefix?: string };
/** A plugin in the configuration: a module specifier, `{ module, prefix?, options? }` or `{ mcp, prefix? }`. */
export type PluginConfig = string | ModulePluginConfig | McpPluginConfig;

type Issue = z.core.$ZodIssue;

function reissue(ctx: z.RefinementCtx, issues: readonly Issue[], prefix: readonly PropertyKey[] = []) {
  for (const issue of issues) {
    ctx.addIssue({
      ...issue,
      code: 'custom',
      path: [...prefix, ...issue.path],
    } as Parameters<z.RefinementCtx['addIssue']>[0]);
  }
}

/**
 * One plugin entry. Dispatched on its shape so an error names the field that is wrong instead
 * of zod's generic "no union member matched".
 */
export const PluginConfigSchema = z.unknown().transform((value, ctx): PluginConfig => {
  if (typeof value === 'string') {
    if (value.length > 0) return value;
    ctx.addIssue({ code: 'custom', message: 'a module specifier may not be empty' });
    return z.NEVER;
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    if ('mcp' in value) {
      const outer = McpPluginSchema.safeParse(value);
      if (!outer.success) {
        reissue(ctx, outer.error.issues);
        return z.NEVER;
      }
      const server = (value as { mcp: unknown }).mcp;
      const hasUrl = typeof server === 'object' && server !== null && 'url' in server;
      const branch = McpServerSchema.options[hasUrl ? 1 : 0];
      const inner = branch.safeParse(server);
      if (!inner.success) {
        reissue(ctx, inner.error.issues, ['mcp']);
        return z.NEVER;
      }
      return { ...outer.data, mcp: inner.data } as McpPluginConfig;
    }
    if ('module' in value) {
      const parsed = ModulePluginSchema.safeParse(value);
      if (parsed.success) return parsed.data;
      reissue(ctx, parsed.error.issues);
      return z.NEVER;
    }
  }
  ctx.addIssue({
    code: 'custom',
    message: 'a plugin is a module specifier string, { "module": "…" } or { "mcp": { "command": "…" } }',
  });
  return z.NEVER;
});

/**
 * `stepwise.config.json` (or `.js`/`.mjs`/`.ts` exporting it as default). Relative paths
 * resolve against the directory of the configuration file.
 */
export const StepwiseConfigSchema = z
  .object({
    $schema: z.string().optional(),
    /** `sequential` (strict), `dag` (permissive, parallel) or `agentic`. Default `dag`. */
    engine: z.enum(['sequential', 'dag', 'agentic']).optional(),
    /** The directory tools may touch. Default: the configuration file's directory (or the current one). */
    workspace: z.string().min(1).optional(),
    /** The SQLite journal. Default `.stepwise/stepwise.db` inside the workspace. */
    database: z.string().min(1).optional(),
    /** A journal shared by workers on many machines: `{ kind: 'postgres', url, schema? }` (`@stepwise/store-postgres`). Default: SQLite at `database`. */
    store: z
      .object({ kind: z.literal('postgres'), url: z.string().min(1), schema: z.string().min(1).optional() })
      .strict()
      .optional(),
    approvals: ApprovalsConfigSchema.optional(),
    commands: CommandsConfigSchema.optional(),
    /** Steps run at once by the dag and agentic engines. Default 4. */
    concurrency: z.number().int().min(1).max(1024).optional(),
    /** Retry policy for steps that set none (dag and agentic engines). */
    retry: RetryPolicySchema.optional(),
    /** Timeout for steps and tools that set none, in ms. Default: none. */
    timeoutMs: z.number().int().positive().optional(),
    /** How long a crashed process keeps a run locked, in ms. Default 30 000. */
    leaseTtlMs: z.number().int().min(100).optional(),
    /** `batched`: idempotent steps' ends share commits (a crash can run them again). Default `step`. */
    durability: z.enum(['step', 'batched']).optional(),
    /** `referenced`: outputs stay in memory only while a pending step references them. Default `all`. */
    retainOutputs: z.enum(['all', 'referenced']).optional(),
    /** Re-run in-flight non-idempotent steps on resume instead of failing them. Default false. */
    allowRerunInterrupted: z.boolean().optional(),
    /** Environment variables whose values are redacted from the journal and the output. */
    secretEnv: z.array(z.string().min(1)).optional(),
    model: ModelConfigSchema.optional(),
    /** Agentic engine limits. */
    agentic: z
      .object({
        maxTurns: z.number().int().positive().optional(),
        maxConsecutiveToolCalls: z.number().int().positive().optional(),
        maxToolFailures: z.number().int().positive().optional(),
        tokenBudget: z.number().int().positive().optional(),
        maxContextTokens: z.number().int().positive().optional(),
        maxToolResultTokens: z.number().int().positive().optional(),
        /** BLOCKED: `fail` the step, or `ask` a person (the run waits; `stepwise respond --answer`). */
        onBlocked: z.enum(['fail', 'ask']).optional(),
        /** Turn and tool-failure limits: `fail`, or `ask` a person whether the step may go on. */
        onLimit: z.enum(['fail', 'ask']).optional(),
      })
      .strict()
      .optional(),
    plugins: z.array(PluginConfigSchema).optional(),
    /**
     * `stepwise solve`'s validation, run after every implementation attempt: named argv commands
     * (no shell), each mandatory unless `optional`, e.g. `{ "test": ["npm", "test"], "lint":
     * { "command": ["npx", "biome", "check"], "optional": true } }`. `--validate` replaces it.
     */
    validation: z.record(z.string().min(1), z.union([ValidationArgvSchema, ValidationCommandSchema])).optional(),
    /** `stepwise solve`'s attempts and checkpoints. */
    solve: z
      .object({
        /** Attempts per step. Default 3. */
        maxAttempts: z.number().int().min(1).optional(),
        /** Regenerations of the rest of the plan after a step used all its attempts. Default 1. */
        maxReplans: z.number().int().min(0).optional(),
        /** After a validated step with steps to go: `rules` continue, `model` asks the model. Default `rules`. */
        adjust: z.enum(['rules', 'model']).optional(),
        /**
         * Names (directories or files, at any depth) each attempt's checkpoint leaves out: neither
         * recorded nor restored. Default `["node_modules", ".stepwise"]`; ignored files are recorded otherwise.
         */
        checkpointExclude: z.array(z.string().min(1)).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** A validated configuration file. */
export type StepwiseConfig = z.infer<typeof StepwiseConfigSchema>;

/** Identity with types, for `stepwise.config.ts`: `export default defineConfig({ engine: 'dag' })`. */
export function defineConfig(config: z.input<typeof StepwiseConfigSchema>): z.input<typeof StepwiseConfigSchema> {
  return config;
}

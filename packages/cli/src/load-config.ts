import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createJsonLocator, ErrorCodes, StepwiseError } from '@stepwise/core';
import { messageOf, schemaIssueProblems } from '@stepwise/core/engine';
import type { z } from 'zod';
import { type StepwiseConfig, StepwiseConfigSchema } from './config-schema.js';
import { localPluginFiles } from './load-plugins.js';
import { parseJsonFile } from './parse-json-file.js';
import { checkTrust, type TrustCandidate, type TrustOptions, trustStorePath } from './trust-store.js';

/** Looked up in this order in the starting directory, then in each parent. */
export const CONFIG_FILE_NAMES = [
  'stepwise.config.json',
  'stepwise.config.jsonc',
  'stepwise.config.ts',
  'stepwise.config.mts',
  'stepwise.config.mjs',
  'stepwise.config.js',
] as const;

/** One problem in a configuration file. */
export interface ConfigProblem {
  /** JSON pointer, e.g. `/approvals/exec`. */
  readonly path: string;
  readonly message: string;
  /** 1-based, JSON files only. */
  readonly line?: number;
  readonly column?: number;
}

export interface LoadedConfig {
  readonly config: StepwiseConfig;
  /** Absolute path of the file, or `undefined` when none was found (defaults apply). */
  readonly file: string | undefined;
  /** Where relative paths in the configuration resolve from. */
  readonly directory: string;
  /** The trust store the file and its plugins were checked against (`trust`), kept out of the tools' reach. */
  readonly trustStore?: string;
}

export interface LoadConfigOptions {
  /** An explicit file (`--config`); it must exist. */
  readonly file?: string;
  /** Where the search starts. Default `process.cwd()`. */
  readonly cwd?: string;
  /** Search parent directories too. Default true. */
  readonly searchParents?: boolean;
  /**
   * Load the file and the local plugin files it names only when `stepwise trust` recorded their
   * current SHA-256 (`UntrustedFileError`, E601, otherwise). The command line always checks;
   * default: no check.
   */
  readonly trust?: TrustOptions;
}

async function isFile(candidate: string): Promise<boolean> {
  try {
    return (await stat(candidate)).isFile();
  } catch {
    return false;
  }
}

/** The nearest configuration file from `directory` upwards, if any. */
export async function findConfigFile(directory: string, searchParents = true): Promise<string | undefined> {
  let current = path.resolve(directory);
  while (true) {
    for (const name of CONFIG_FILE_NAMES) {
      const candidate = path.join(current, name);
      if (await isFile(candidate)) return candidate;
    }
    const parent = path.dirname(current);
    if (!searchParents || parent === current) return undefined;
    current = parent;
  }
}

function problemsOf(issues: readonly z.core.$ZodIssue[], text: string | undefined): ConfigProblem[] {
  const locate = text === undefined ? undefined : createJsonLocator(text);
  const problems: ConfigProblem[] = schemaIssueProblems(issues, StepwiseConfigSchema, 'option').map((entry) => {
    const at = locate?.(entry.path);
    return at ? { ...entry, line: at.line, column: at.column } : entry;
  });
  // In file order, as a reader meets them (the schema reports refinement issues after the rest).
  return problems
    .map((problem, index) => ({ problem, index }))
    .sort(
      (a, b) =>
        (a.problem.line ?? Number.POSITIVE_INFINITY) - (b.problem.line ?? Number.POSITIVE_INFINITY) ||
        (a.problem.column ?? 0) - (b.problem.column ?? 0) ||
        a.index - b.index,
    )
    .map(({ problem }) => problem);
}

/** `file:line:column /path message`, one line per problem. */
export function formatConfigProblems(file: string | undefined, problems: readonly ConfigProblem[]): string {
  const name = file ?? 'configuration';
  return problems
    .map((problem) => {
      const where = problem.line === undefined ? name : `${name}:${problem.line}:${problem.column}`;
      return `${where} ${problem.path || '/'}: ${problem.message}`;
    })
    .join('\n');
}

function configError(problems: readonly ConfigProblem[], file: string | undefined): StepwiseError {
  const first = problems[0];
  const location =
    file && first?.line !== undefined
      ? `${file}:${first.line}:${first.column}`
      : `${file ?? 'configuration'}#${first?.path ?? ''}`;
  return new StepwiseError(
    ErrorCodes.CONFIG_INVALID,
    `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${formatConfigProblems(file, problems)}`,
    { location, details: { problems } },
  );
}

/**
 * Validates a configuration object. Throws E601 listing every problem, each located by JSON
 * pointer and, when the JSON `text` is given (strict JSON: comments blanked out), by line and column.
 */
export function parseConfig(value: unknown, source: { file?: string; text?: string } = {}): StepwiseConfig {
  const parsed = StepwiseConfigSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw configError(problemsOf(parsed.error.issues, source.text), source.file);
}

/**
 * MCP server options only `@stepwise/tools-mcp` can judge (the `allowHosts` patterns, `network` with
 * `allowHosts`), checked by its own validation so `validate` reports them with the file's line.
 * Without the package installed the server fails to load later, naming it.
 */
async function checkMcpServers(config: StepwiseConfig, source: { file?: string; text?: string }): Promise<void> {
  const servers = (config.plugins ?? []).flatMap((plugin, index) =>
    typeof plugin === 'object' && 'mcp' in plugin ? [{ index, server: plugin.mcp }] : [],
  );
  if (servers.length === 0) return;
  const tools = await import('@stepwise/tools-mcp').catch(() => undefined);
  if (!tools) return;
  const locate = source.text === undefined ? undefined : createJsonLocator(source.text);
  for (const { index, server } of servers) {
    try {
      tools.validateMcpOptions(server, `/plugins/${index}/mcp`);
    } catch (error) {
      if (!StepwiseError.isInstance(error) || error.code !== ErrorCodes.CONFIG_INVALID) throw error;
      const pointer = error.location ?? `/plugins/${index}/mcp`;
      const at = locate?.(pointer);
      const message = error.message.replace(/^MCP server options( at \S+)?: /, '');
      throw configError([{ path: pointer, message, ...(at ? { line: at.line, column: at.column } : {}) }], source.file);
    }
  }
}

async function importModule(file: string): Promise<unknown> {
  if (/\.[cm]?tsx?$/.test(file)) {
    const { createJiti } = await import('jiti');
    // No transpile cache: it lives in the project's node_modules, where a command could plant code for a trusted file.
    const jiti = createJiti(pathToFileURL(file).href, { moduleCache: false, fsCache: false });
    return jiti.import(file, { default: true });
  }
  const module = (await import(pathToFileURL(file).href)) as { default?: unknown };
  return module.default ?? module;
}

const isJsonFile = (file: string) => /\.jsonc?$/.test(file);

/** JSONC, like the plan files: comments and trailing commas are allowed. */
async function parseJsonConfig(text: string, file: string): Promise<StepwiseConfig> {
  const { value, json } = parseJsonFile(text, file);
  const config = parseConfig(value, { file, text: json });
  await checkMcpServers(config, { file, text: json });
  return config;
}

async function evaluateConfigModule(file: string): Promise<StepwiseConfig> {
  let value: unknown;
  try {
    value = await importModule(file);
  } catch (error) {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `${file} could not be loaded: ${messageOf(error)}`, {
      location: file,
      cause: error,
    });
  }
  if (typeof value === 'function') value = await (value as () => unknown)();
  const config = parseConfig(value, { file });
  await checkMcpServers(config, { file });
  return config;
}

async function existingFile(file: string): Promise<string> {
  const absolute = path.resolve(file);
  if (!(await isFile(absolute))) {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `configuration file not found: ${file}`, { location: file });
  }
  return absolute;
}

/** Reads, evaluates (for JS/TS) and validates one configuration file. */
export async function loadConfigFile(file: string): Promise<StepwiseConfig> {
  const absolute = await existingFile(file);
  if (isJsonFile(absolute)) return parseJsonConfig(await readFile(absolute, 'utf8'), absolute);
  return evaluateConfigModule(absolute);
}

/** The local plugin files a configuration names, as trust candidates. */
export function pluginTrustCandidates(config: StepwiseConfig, file: string): TrustCandidate[] {
  return localPluginFiles(config.plugins ?? [], path.dirname(file)).map((plugin) => ({
    path: plugin,
    kind: 'plugin' as const,
    namedBy: file,
  }));
}

/**
 * Loads a configuration file only once it and its local plugin files are trusted. A JSON file is
 * read once and parsed (running nothing) before its hash is checked together with its plugins'; a
 * JS/TS file is code, so its own hash is checked before it is evaluated, its plugins' after.
 */
async function loadTrustedConfigFile(file: string, trust: TrustOptions): Promise<StepwiseConfig> {
  const absolute = await existingFile(file);
  if (isJsonFile(absolute)) {
    const bytes = await readFile(absolute);
    const config = await parseJsonConfig(bytes.toString('utf8'), absolute);
    await checkTrust([{ path: absolute, kind: 'config', bytes }, ...pluginTrustCandidates(config, absolute)], trust);
    return config;
  }
  await checkTrust([{ path: absolute, kind: 'config' }], trust);
  const config = await evaluateConfigModule(absolute);
  await checkTrust(pluginTrustCandidates(config, absolute), trust);
  return config;
}

/** Finds (or takes `--config`) and validates the configuration; no file means all defaults. */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const file = options.file ? path.resolve(cwd, options.file) : await findConfigFile(cwd, options.searchParents);
  const trustStore = options.trust ? { trustStore: trustStorePath(options.trust) } : {};
  if (!file) return { config: {}, file: undefined, directory: cwd, ...trustStore };
  const config = options.trust ? await loadTrustedConfigFile(file, options.trust) : await loadConfigFile(file);
  return { config, file, directory: path.dirname(file), ...trustStore };
}

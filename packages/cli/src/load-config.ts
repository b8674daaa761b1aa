import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createJsonLocator, ErrorCodes, StepwiseError, schemaIssueProblems } from '@stepwise/core';
import type { z } from 'zod';
import { type StepwiseConfig, StepwiseConfigSchema } from './config-schema.js';
import { parseJsonFile } from './parse-json-file.js';

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
}

export interface LoadConfigOptions {
  /** An explicit file (`--config`); it must exist. */
  readonly file?: string;
  /** Where the search starts. Default `process.cwd()`. */
  readonly cwd?: string;
  /** Search parent directories too. Default true. */
  readonly searchParents?: boolean;
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

/**
 * Validates a configuration object. Throws E601 listing every problem, each located by JSON
 * pointer and, when the JSON `text` is given (strict JSON: comments blanked out), by line and column.
 */
export function parseConfig(value: unknown, source: { file?: string; text?: string } = {}): StepwiseConfig {
  const parsed = StepwiseConfigSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = problemsOf(parsed.error.issues, source.text);
  const first = problems[0];
  const location =
    source.file && first?.line !== undefined
      ? `${source.file}:${first.line}:${first.column}`
      : `${source.file ?? 'configuration'}#${first?.path ?? ''}`;
  throw new StepwiseError(
    ErrorCodes.CONFIG_INVALID,
    `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${formatConfigProblems(source.file, problems)}`,
    { location, details: { problems } },
  );
}

async function importModule(file: string): Promise<unknown> {
  if (/\.[cm]?tsx?$/.test(file)) {
    const { createJiti } = await import('jiti');
    const jiti = createJiti(pathToFileURL(file).href, { moduleCache: false });
    return jiti.import(file, { default: true });
  }
  const module = (await import(pathToFileURL(file).href)) as { default?: unknown };
  return module.default ?? module;
}

/** Reads, evaluates (for JS/TS) and validates one configuration file. */
export async function loadConfigFile(file: string): Promise<StepwiseConfig> {
  const absolute = path.resolve(file);
  if (!(await isFile(absolute))) {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `configuration file not found: ${file}`, { location: file });
  }
  if (/\.jsonc?$/.test(absolute)) {
    // JSONC, like the plan files: comments and trailing commas are allowed.
    const { value, json } = parseJsonFile(await readFile(absolute, 'utf8'), absolute);
    return parseConfig(value, { file: absolute, text: json });
  }
  let value: unknown;
  try {
    value = await importModule(absolute);
  } catch (error) {
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `${absolute} could not be loaded: ${error instanceof Error ? error.message : String(error)}`,
      { location: absolute, cause: error },
    );
  }
  if (typeof value === 'function') value = await (value as () => unknown)();
  return parseConfig(value, { file: absolute });
}

/** Finds (or takes `--config`) and validates the configuration; no file means all defaults. */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const file = options.file ? path.resolve(cwd, options.file) : await findConfigFile(cwd, options.searchParents);
  if (!file) return { config: {}, file: undefined, directory: cwd };
  return { config: await loadConfigFile(file), file, directory: path.dirname(file) };
}

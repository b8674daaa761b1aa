import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCodes, type Plugin, StepwiseError, type ToolRegistry } from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';
import type { McpServerConfig, PluginConfig } from './config-schema.js';
import { importOptionalPackage } from './import-optional-package.js';

/**
 * A plugin as `createRunner` accepts it: a plugin object (or a promise of one, like `mcpTools()`
 * returns), a configuration entry (`"stepwise-plugin-hello"`, `{ module, prefix, options }`,
 * `{ mcp, prefix }`), or `{ plugin, prefix }` to prefix an object.
 */
export type PluginSource =
  | Plugin
  | Promise<Plugin>
  | PluginConfig
  | { readonly plugin: Plugin | Promise<Plugin>; readonly prefix?: string };

function isPluginObject(value: unknown): value is Plugin {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Plugin).name === 'string' &&
    Array.isArray((value as Plugin).tools)
  );
}

function pluginError(specifier: string, message: string, cause?: unknown): StepwiseError {
  return new StepwiseError(ErrorCodes.PLUGIN_INVALID, `plugin "${specifier}": ${message}`, {
    location: specifier,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * The file a path specifier (`./tools/plugin.mjs`, an absolute path) names, resolved against
 * `baseDirectory`; `undefined` for a package name, which Node's resolution finds in `node_modules`.
 */
export function localPluginFile(specifier: string, baseDirectory: string): string | undefined {
  return specifier.startsWith('.') || path.isAbsolute(specifier) ? path.resolve(baseDirectory, specifier) : undefined;
}

/** The local files (path specifiers) among plugin sources: what is trusted by hash and kept from the tools. */
export function localPluginFiles(sources: readonly PluginSource[], baseDirectory: string): string[] {
  const files = sources.flatMap((source) => {
    if (typeof source === 'string') return [localPluginFile(source, baseDirectory)];
    if (typeof source === 'object' && source !== null && 'module' in source && typeof source.module === 'string') {
      return [localPluginFile(source.module, baseDirectory)];
    }
    return [];
  });
  return [...new Set(files.filter((file): file is string => file !== undefined))];
}

/** Resolves a specifier like Node would from a file in `baseDirectory` (packages, relative paths, TS via jiti). */
async function importPluginModule(specifier: string, baseDirectory: string): Promise<Record<string, unknown>> {
  const { createJiti } = await import('jiti');
  const parent = pathToFileURL(path.join(baseDirectory, 'stepwise.config.js')).href;
  // No transpile cache: it lives in the project's node_modules, where a command could plant code for a trusted file.
  const jiti = createJiti(parent, { moduleCache: false, fsCache: false });
  const resolved =
    localPluginFile(specifier, baseDirectory) ?? jiti.esmResolve(specifier, { parentURL: parent, try: true });
  if (!resolved) throw pluginError(specifier, `cannot find the module from ${baseDirectory} (is it installed?)`);
  const file = resolved.startsWith('file:') ? new URL(resolved) : pathToFileURL(resolved);
  try {
    if (/\.[cm]?tsx?$/.test(file.pathname)) return (await jiti.import(file.href)) as Record<string, unknown>;
    return (await import(file.href)) as Record<string, unknown>;
  } catch (error) {
    throw pluginError(specifier, `cannot be loaded: ${messageOf(error)}`, error);
  }
}

/**
 * The plugin a module provides: its default export or its `plugin` export, either a
 * `definePlugin` result or a (possibly async) factory called with `options`.
 */
export async function loadPluginModule(specifier: string, baseDirectory: string, options?: unknown): Promise<Plugin> {
  const module = await importPluginModule(specifier, baseDirectory);
  const candidate = module.default ?? module.plugin;
  let value: unknown = candidate;
  if (typeof candidate === 'function') {
    try {
      value = await (candidate as (options: unknown) => unknown)(options);
    } catch (error) {
      throw pluginError(specifier, `its factory failed: ${messageOf(error)}`, error);
    }
  }
  // A CommonJS module imported from ESM nests its exports under `default`.
  if (!isPluginObject(value) && isPluginObject((value as { default?: unknown } | undefined)?.default)) {
    value = (value as { default: unknown }).default;
  }
  if (!isPluginObject(value)) {
    throw pluginError(
      specifier,
      'the module must export a definePlugin({ name, tools }) result (or a function returning one) as default or as "plugin"',
    );
  }
  return value;
}

/** What `registerPlugins` adds to the plugins it starts. */
export interface RegisterPluginsOptions {
  /**
   * Files and directories a stdio MCP server's OS sandbox hides or shows read-only, on top of its
   * own `sandboxOptions.protectedPaths`: the journal, the configuration, plugin files.
   */
  readonly protectedPaths?: readonly string[];
}

type StdioServerConfig = Extract<McpServerConfig, { command: string }>;

/** A stdio server's sandbox options with paths resolved against the configuration's directory and the host's protected paths added. */
function stdioSandboxOptions(server: StdioServerConfig, baseDirectory: string, protectedPaths: readonly string[]) {
  const given = server.sandboxOptions ?? {};
  const absolute = (list: readonly string[] | undefined) =>
    (list ?? []).map((entry) => path.resolve(baseDirectory, entry));
  return {
    ...given,
    ...(given.workspace === undefined ? {} : { workspace: path.resolve(baseDirectory, given.workspace) }),
    ...(given.writablePaths ? { writablePaths: absolute(given.writablePaths) } : {}),
    ...(given.readablePaths ? { readablePaths: absolute(given.readablePaths) } : {}),
    ...(given.hiddenPaths ? { hiddenPaths: absolute(given.hiddenPaths) } : {}),
    protectedPaths: [...new Set([...absolute(given.protectedPaths), ...protectedPaths])],
  };
}

async function loadMcpPlugin(
  server: McpServerConfig,
  baseDirectory: string,
  protectedPaths: readonly string[],
): Promise<Plugin> {
  const { mcpTools } = await importOptionalPackage(
    '@stepwise/tools-mcp',
    'an MCP server plugin',
    '/plugins',
    () => import('@stepwise/tools-mcp'),
  );
  if (!('command' in server)) return mcpTools({ ...server });
  return mcpTools({
    ...server,
    cwd: path.resolve(baseDirectory, server.cwd ?? '.'),
    sandboxOptions: stdioSandboxOptions(server, baseDirectory, protectedPaths),
  });
}

/** A human label for error messages and `--help` listings. */
export function describePluginSource(source: PluginSource): string {
  if (typeof source === 'string') return source;
  if (source instanceof Promise) return 'plugin (promise)';
  if ('module' in source && typeof source.module === 'string') return source.module;
  if ('mcp' in source) {
    const server = source.mcp as McpServerConfig;
    return 'command' in server ? `mcp: ${[server.command, ...(server.args ?? [])].join(' ')}` : `mcp: ${server.url}`;
  }
  if ('plugin' in source) return 'plugin';
  return (source as Plugin).name;
}

/**
 * Loads each source and registers it, in order. Module and MCP plugins load concurrently
 * (servers start in parallel) but register in the order given, so collisions are deterministic.
 * On failure, plugins already loaded are disposed before the error is thrown.
 */
export async function registerPlugins(
  registry: ToolRegistry,
  sources: readonly PluginSource[],
  baseDirectory: string,
  options: RegisterPluginsOptions = {},
): Promise<void> {
  const loads = sources.map(async (source): Promise<{ plugin: Plugin; prefix?: string }> => {
    if (typeof source === 'string') return { plugin: await loadPluginModule(source, baseDirectory) };
    if (source instanceof Promise) return { plugin: await source };
    if ('module' in source && typeof source.module === 'string') {
      const plugin = await loadPluginModule(source.module, baseDirectory, source.options);
      return { plugin, ...(source.prefix === undefined ? {} : { prefix: source.prefix }) };
    }
    if ('mcp' in source) {
      const plugin = await loadMcpPlugin(source.mcp as McpServerConfig, baseDirectory, options.protectedPaths ?? []);
      return { plugin, ...(source.prefix === undefined ? {} : { prefix: source.prefix }) };
    }
    if ('plugin' in source && !isPluginObject(source)) {
      return { plugin: await source.plugin, ...(source.prefix === undefined ? {} : { prefix: source.prefix }) };
    }
    return { plugin: source as Plugin };
  });
  const settled = await Promise.allSettled(loads);
  const failure = settled.find((outcome) => outcome.status === 'rejected');
  if (failure) {
    await Promise.allSettled(
      settled.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value.plugin.dispose?.() : undefined)),
    );
    throw failure.reason;
  }
  const loaded = settled.map(
    (outcome) => (outcome as PromiseFulfilledResult<{ plugin: Plugin; prefix?: string }>).value,
  );
  for (const [index, { plugin, prefix }] of loaded.entries()) {
    try {
      await registry.use(plugin, prefix === undefined ? {} : { prefix });
    } catch (error) {
      // The registry owns the ones registered so far; the rest are still ours to stop.
      await Promise.allSettled(loaded.slice(index).map((entry) => entry.plugin.dispose?.()));
      throw StepwiseError.isInstance(error) ? error : pluginError(plugin.name, messageOf(error), error);
    }
  }
}

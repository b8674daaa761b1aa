import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCodes, type Plugin, StepwiseError, type ToolRegistry } from '@stepwise/core';
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

/** Resolves a specifier like Node would from a file in `baseDirectory` (packages, relative paths, TS via jiti). */
async function importPluginModule(specifier: string, baseDirectory: string): Promise<Record<string, unknown>> {
  const { createJiti } = await import('jiti');
  const parent = pathToFileURL(path.join(baseDirectory, 'stepwise.config.js')).href;
  const jiti = createJiti(parent, { moduleCache: false });
  const relative = specifier.startsWith('.') || path.isAbsolute(specifier);
  const resolved = relative
    ? path.resolve(baseDirectory, specifier)
    : jiti.esmResolve(specifier, { parentURL: parent, try: true });
  if (!resolved) throw pluginError(specifier, `cannot find the module from ${baseDirectory} (is it installed?)`);
  const file = resolved.startsWith('file:') ? new URL(resolved) : pathToFileURL(resolved);
  try {
    if (/\.[cm]?tsx?$/.test(file.pathname)) return (await jiti.import(file.href)) as Record<string, unknown>;
    return (await import(file.href)) as Record<string, unknown>;
  } catch (error) {
    throw pluginError(specifier, `cannot be loaded: ${error instanceof Error ? error.message : String(error)}`, error);
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
      throw pluginError(
        specifier,
        `its factory failed: ${error instanceof Error ? error.message : String(error)}`,
        error,
      );
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

async function loadMcpPlugin(server: McpServerConfig, baseDirectory: string): Promise<Plugin> {
  const { mcpTools } = await importOptionalPackage(
    '@stepwise/tools-mcp',
    'an MCP server plugin',
    '/plugins',
    () => import('@stepwise/tools-mcp'),
  );
  const options =
    'command' in server ? { ...server, cwd: path.resolve(baseDirectory, server.cwd ?? '.') } : { ...server };
  return mcpTools(options);
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
): Promise<void> {
  const loads = sources.map(async (source): Promise<{ plugin: Plugin; prefix?: string }> => {
    if (typeof source === 'string') return { plugin: await loadPluginModule(source, baseDirectory) };
    if (source instanceof Promise) return { plugin: await source };
    if ('module' in source && typeof source.module === 'string') {
      const plugin = await loadPluginModule(source.module, baseDirectory, source.options);
      return { plugin, ...(source.prefix === undefined ? {} : { prefix: source.prefix }) };
    }
    if ('mcp' in source) {
      const plugin = await loadMcpPlugin(source.mcp as McpServerConfig, baseDirectory);
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
      throw StepwiseError.isInstance(error)
        ? error
        : pluginError(plugin.name, error instanceof Error ? error.message : String(error), error);
    }
  }
}

import { ErrorCodes, messageOf, StepwiseError } from '../errors.js';
import type { ToolDefinition } from './define-tool.js';
import { type PreconditionChecker, type PreconditionEntry, PreconditionRegistry } from './preconditions.js';
import { compileSchema, type JsonSchema } from './schema.js';

// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every input type.
export type AnyTool = ToolDefinition<any, any>;

export interface PluginContext {
  readonly registry: ToolRegistry;
}

/**
 * What plan validation and revision need of a whitelist (`ToolRegistry` is one): which names
 * are tools, and their input schemas.
 */
export interface ToolCatalog {
  get(name: string): AnyTool | undefined;
  has(name: string): boolean;
  list(): readonly AnyTool[];
  aliases(): ReadonlyMap<string, string>;
}

/** A bundle of tools (and precondition checkers) from one package or server. */
export interface Plugin {
  readonly name: string;
  readonly version?: string;
  readonly tools: readonly AnyTool[];
  readonly preconditions?: Readonly<Record<string, PreconditionEntry | PreconditionChecker>>;
  /** Alternative names for this plugin's tools: `{ read_file: 'file_read' }`. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** Called once when the plugin is registered. */
  setup?(context: PluginContext): void | Promise<void>;
  /** Called when the registry (the runner) closes: stop child processes, close sockets. */
  dispose?(): void | Promise<void>;
}

export function definePlugin(plugin: Plugin): Plugin {
  if (!plugin.name) throw new TypeError('a plugin needs a name');
  return plugin;
}

/** A tool rendered for LLM function calling. */
export interface FunctionDefinition {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
}

export interface UseOptions {
  /** Prefixes every tool name (and alias) of the plugin, e.g. `gh_`, to avoid collisions. */
  readonly prefix?: string;
}

function inputJsonSchema(tool: AnyTool): JsonSchema {
  try {
    return compileSchema(tool.input).toJsonSchema();
  } catch (error) {
    const reason = messageOf(error);
    throw new StepwiseError(ErrorCodes.PLUGIN_INVALID, `tool "${tool.name}": ${reason}`, {
      location: `tools/${tool.name}/input`,
      details: { tool: tool.name, ...(StepwiseError.isInstance(error) ? error.details : {}) },
      cause: error,
    });
  }
}

/**
 * The whitelist: a step whose tool is not registered here is rejected before anything runs.
 */
export class ToolRegistry implements ToolCatalog {
  readonly preconditions = new PreconditionRegistry();
  readonly #tools = new Map<string, AnyTool>();
  readonly #aliases = new Map<string, string>();
  readonly #plugins: Plugin[] = [];

  constructor(tools: Iterable<AnyTool> = []) {
    for (const tool of tools) this.register(tool);
  }

  register(tool: AnyTool): this {
    if (this.#tools.has(tool.name) || this.#aliases.has(tool.name)) {
      throw new StepwiseError(ErrorCodes.PLUGIN_INVALID, `tool "${tool.name}" is already registered`, {
        location: tool.name,
      });
    }
    this.#tools.set(tool.name, tool);
    return this;
  }

  /** `alias` resolves to `target` (which must be registered). */
  alias(alias: string, target: string): this {
    if (!this.#tools.has(target)) throw new TypeError(`alias "${alias}" points at unregistered tool "${target}"`);
    if (this.#tools.has(alias) || this.#aliases.has(alias)) {
      throw new StepwiseError(ErrorCodes.PLUGIN_INVALID, `tool name "${alias}" is already registered`, {
        location: alias,
      });
    }
    this.#aliases.set(alias, target);
    return this;
  }

  /**
   * Registers a plugin's tools, aliases and precondition checkers. Collisions are an error
   * unless a prefix is given; nothing is registered when any name collides.
   */
  async use(plugin: Plugin, options: UseOptions = {}): Promise<void> {
    const prefix = options.prefix ?? '';
    const tools = plugin.tools.map((tool) => (prefix ? { ...tool, name: `${prefix}${tool.name}` } : tool));
    const aliases = Object.entries(plugin.aliases ?? {}).map(([alias, target]) => [
      `${prefix}${alias}`,
      `${prefix}${target}`,
    ]);
    const names = [...tools.map((tool) => tool.name), ...aliases.map(([alias]) => alias as string)];
    const clash = names.find((name, index) => this.has(name) || names.indexOf(name) !== index);
    if (clash !== undefined) {
      throw new StepwiseError(
        ErrorCodes.PLUGIN_INVALID,
        `plugin "${plugin.name}" registers "${clash}", which is already taken; use { prefix } to rename its tools`,
        { location: clash },
      );
    }
    for (const tool of tools) this.register(tool);
    for (const [alias, target] of aliases) this.alias(alias as string, target as string);
    for (const [kind, entry] of Object.entries(plugin.preconditions ?? {})) {
      if (!this.preconditions.has(kind)) this.preconditions.register(kind, entry);
    }
    this.#plugins.push(plugin);
    await plugin.setup?.({ registry: this });
  }

  /** The tool for a name or alias. */
  get(name: string): AnyTool | undefined {
    return this.#tools.get(name) ?? this.#tools.get(this.#aliases.get(name) ?? '');
  }

  has(name: string): boolean {
    return this.#tools.has(name) || this.#aliases.has(name);
  }

  list(): AnyTool[] {
    return [...this.#tools.values()];
  }

  aliases(): ReadonlyMap<string, string> {
    return this.#aliases;
  }

  /**
   * Tool definitions as JSON Schema for LLM function calling, optionally only `names`.
   * Throws E602 (location `tools/<name>/input`) for a tool whose input schema cannot be
   * expressed as JSON Schema, rather than showing the model parameters the tool would reject.
   */
  toFunctionDefinitions(names?: readonly string[]): FunctionDefinition[] {
    const tools = names
      ? names.map((name) => this.get(name)).filter((tool): tool is AnyTool => tool !== undefined)
      : this.list();
    return tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      parameters: inputJsonSchema(tool),
    }));
  }

  /** Disposes every plugin (in reverse order); errors are collected, not thrown one by one. */
  async dispose(): Promise<void> {
    const errors: unknown[] = [];
    for (const plugin of this.#plugins.splice(0).reverse()) {
      try {
        await plugin.dispose?.();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, 'plugin dispose failed');
  }
}

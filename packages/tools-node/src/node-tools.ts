import { definePlugin, type Plugin } from '@stepwise/core';
import { dirListTool } from './dir-list-tool.js';
import { fileCreateTool } from './file-create-tool.js';
import { fileDeleteTool } from './file-delete-tool.js';
import { fileEditTool } from './file-edit-tool.js';
import { fileGlobTool } from './file-glob-tool.js';
import { filePatchTool } from './file-patch-tool.js';
import { fileReadTool } from './file-read-tool.js';
import { fileSearchTool } from './file-search-tool.js';
import type { FileSystem } from './file-system.js';
import { fileWriteTool } from './file-write-tool.js';
import { nodePreconditions } from './node-preconditions.js';
import { type CommandOptions, runCommandTool } from './run-command-tool.js';
import { WorkspaceSandbox } from './workspace-sandbox.js';

export interface NodeToolsOptions {
  /** The workspace root every path is confined to (must exist). */
  readonly workspace: string;
  /** `run_command` settings. Without it (or with an empty `allow`) every command is refused. */
  readonly commands?: CommandOptions;
  /** Directory names never written at any depth. Default `['.git']`. */
  readonly protectedNames?: readonly string[];
  /**
   * Files or directories no file tool may read, list, write or delete and the OS sandbox hides
   * from commands, wherever they are (the workspace included): the store's database, config and
   * plugin files. Absolute or workspace-relative. Always added: `.stepwise/` and, at the workspace
   * root, `stepwise.config.*`; each file also protects its SQLite `-wal`, `-shm` and `-journal`.
   */
  readonly protectedPaths?: readonly string[];
  /** Longest path accepted, in characters. Default 4096. */
  readonly maxPathLength?: number;
  /** Replaces `node:fs/promises` for file operations (tests inject failures through it). */
  readonly fileSystem?: FileSystem;
}

/** Names other plan vocabularies use for these tools. */
export const NODE_TOOL_ALIASES: Readonly<Record<string, string>> = {
  read_file: 'file_read',
  write_file: 'file_write',
  modify_file: 'file_edit',
  list_directory: 'dir_list',
  search_code: 'file_search',
  run_terminal: 'run_command',
};

/** The plugin's sandbox and tools, for hosts that want to pick tools one by one. */
export function createNodeTools(options: NodeToolsOptions) {
  const sandbox = new WorkspaceSandbox({
    root: options.workspace,
    ...(options.protectedNames ? { protectedNames: options.protectedNames } : {}),
    ...(options.protectedPaths ? { protectedPaths: options.protectedPaths } : {}),
    ...(options.maxPathLength ? { maxPathLength: options.maxPathLength } : {}),
    ...(options.fileSystem ? { fileSystem: options.fileSystem } : {}),
  });
  const tools = [
    fileReadTool(sandbox),
    fileWriteTool(sandbox),
    fileCreateTool(sandbox),
    fileDeleteTool(sandbox),
    fileEditTool(sandbox),
    filePatchTool(sandbox),
    dirListTool(sandbox),
    fileGlobTool(sandbox),
    fileSearchTool(sandbox),
    runCommandTool(sandbox, options.commands ?? { allow: [] }),
  ];
  return { sandbox, tools, preconditions: nodePreconditions(sandbox) };
}

/**
 * Every tool of this package as one plugin: `registry.use(nodeTools({ workspace, commands: { allow: ['git', 'node'] } }))`.
 * Registers the tools, the aliases (`read_file` → `file_read`, …) and the `file_exists`,
 * `dir_exists` and `project` preconditions.
 */
export function nodeTools(options: NodeToolsOptions): Plugin {
  const { tools, preconditions } = createNodeTools(options);
  return definePlugin({
    name: '@stepwise/tools-node',
    tools,
    aliases: NODE_TOOL_ALIASES,
    preconditions,
  });
}

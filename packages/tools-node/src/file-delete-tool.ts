import path from 'node:path';
import { defineTool, ErrorCodes, SandboxViolation, ToolError } from '@stepwise/core';
import { z } from 'zod';
import { type OpenedDirectory, openChildDirectory, openDirectory } from './directory-descriptor.js';
import { fileSystemError } from './file-errors.js';
import { errorCode, type FileSystem } from './file-system.js';
import type { EntryType } from './walk-tree.js';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

export const fileDeleteInput = z.object({
  path: z.string().describe('File or directory to delete, relative to the workspace.'),
  recursive: z.boolean().optional().describe('Delete a non-empty directory and everything in it. Default false.'),
});

export interface FileDeleteOutput {
  readonly path: string;
  readonly type: EntryType;
  readonly deleted: true;
}

function entryType(stats: { isSymbolicLink(): boolean; isDirectory(): boolean; isFile(): boolean }): EntryType {
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isDirectory()) return 'directory';
  return stats.isFile() ? 'file' : 'other';
}

/**
 * Deletes an entry of an open directory and, for a directory, everything in it, each level
 * opened without following a symlink and emptied through its descriptor: a directory swapped for
 * a symlink meanwhile loses the link, never what it points to.
 */
async function removeTree(fileSystem: FileSystem, parent: OpenedDirectory, name: string): Promise<void> {
  try {
    await fileSystem.unlink(parent.child(name));
    return;
  } catch (error) {
    // Linux says EISDIR for a directory, macOS EPERM.
    if (errorCode(error) !== 'EISDIR' && errorCode(error) !== 'EPERM') throw error;
  }
  const expected = path.join(parent.real, name);
  const directory = openChildDirectory(parent, name, (real) => real === expected);
  if (!directory) {
    throw new SandboxViolation(`${expected} changed while it was being deleted`, {
      location: name,
      details: { reason: 'symlink-escape' },
    });
  }
  try {
    for (const entry of directory.list()) await removeTree(fileSystem, directory, entry.name);
  } finally {
    directory.close();
  }
  await fileSystem.rmdir(parent.child(name));
}

async function removeDirectory(
  fileSystem: FileSystem,
  parent: OpenedDirectory,
  name: string,
  input: { path: string; recursive?: boolean | undefined },
): Promise<void> {
  if (input.recursive) return removeTree(fileSystem, parent, name);
  try {
    await fileSystem.rmdir(parent.child(name));
  } catch (error) {
    if (errorCode(error) === 'ENOTEMPTY' || errorCode(error) === 'EEXIST') {
      throw new ToolError({
        code: ErrorCodes.TOOL_FAILED,
        message: `${input.path} is a non-empty directory; pass recursive: true to delete it and its contents`,
        location: input.path,
      });
    }
    throw error;
  }
}

/**
 * `file_delete`: removes a file, a symlink (the link itself, never its target) or a
 * directory (non-empty only with `recursive`). The workspace root, `.git` and protected paths
 * (and directories holding them) are refused.
 */
export function fileDeleteTool(sandbox: WorkspaceSandbox) {
  return defineTool({
    name: 'file_delete',
    description:
      'Delete a file, symlink or directory in the workspace. Non-empty directories need recursive: true. Destructive.',
    input: fileDeleteInput,
    effect: 'destructive',
    idempotent: false,
    async execute(input): Promise<FileDeleteOutput> {
      const resolved = await sandbox.resolve(input.path, { access: 'write', followFinalSymlink: false });
      const fileSystem = sandbox.fileSystem;
      const directory = path.dirname(resolved.absolute);
      const parent = openDirectory(directory, (real) => real === directory);
      try {
        if (!parent) throw Object.assign(new Error('ENOENT: no such file or directory'), { code: 'ENOENT' });
        const name = path.basename(resolved.absolute);
        const type = entryType(await fileSystem.lstat(parent.child(name)));
        if (type === 'directory') await removeDirectory(fileSystem, parent, name, input);
        else await fileSystem.unlink(parent.child(name));
        return { path: resolved.relative, type, deleted: true };
      } catch (error) {
        throw fileSystemError(error, input.path, 'delete');
      } finally {
        parent?.close();
      }
    },
  });
}

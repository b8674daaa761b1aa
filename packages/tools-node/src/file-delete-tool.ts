import { defineTool, ErrorCodes, ToolError } from '@stepwise/core';
import { z } from 'zod';
import { fileSystemError } from './file-errors.js';
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

/**
 * `file_delete`: removes a file, a symlink (the link itself, never its target) or a
 * directory (non-empty only with `recursive`). The workspace root and `.git` are refused.
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
      try {
        const stats = await fileSystem.lstat(resolved.absolute);
        const type: EntryType = stats.isSymbolicLink()
          ? 'symlink'
          : stats.isDirectory()
            ? 'directory'
            : stats.isFile()
              ? 'file'
              : 'other';
        if (type === 'directory') {
          if (input.recursive) {
            await fileSystem.rm(resolved.absolute, { recursive: true });
          } else {
            try {
              await fileSystem.rmdir(resolved.absolute);
            } catch (error) {
              if ((error as { code?: string }).code === 'ENOTEMPTY' || (error as { code?: string }).code === 'EEXIST') {
                throw new ToolError({
                  code: ErrorCodes.TOOL_FAILED,
                  message: `${input.path} is a non-empty directory; pass recursive: true to delete it and its contents`,
                  location: input.path,
                });
              }
              throw error;
            }
          }
        } else {
          await fileSystem.unlink(resolved.absolute);
        }
        return { path: resolved.relative, type, deleted: true };
      } catch (error) {
        throw fileSystemError(error, input.path, 'delete');
      }
    },
  });
}

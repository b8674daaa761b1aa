import { defineTool, ToolError } from '@stepwise/core';
import { z } from 'zod';
import { commitChanges } from './commit-changes.js';
import { fileSystemError } from './file-errors.js';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

export const fileWriteInput = z.object({
  path: z.string().describe('File path relative to the workspace.'),
  contents: z.string().describe('The whole new contents.'),
  encoding: z.enum(['utf8', 'base64']).optional().describe('How `contents` is encoded. Default utf8.'),
  createDirectories: z.boolean().optional().describe('Create missing parent directories. Default true.'),
});

export interface FileWriteOutput {
  readonly path: string;
  readonly bytes: number;
  /** True when the file did not exist before. */
  readonly created: boolean;
}

/** Decodes the `contents` argument of the write tools. */
export function contentsBuffer(contents: string, encoding: 'utf8' | 'base64' | undefined): Buffer {
  return encoding === 'base64' ? Buffer.from(contents, 'base64') : Buffer.from(contents, 'utf8');
}

/**
 * `file_write`: creates or replaces a file atomically — new contents go to an exclusively
 * created temporary file in the same directory, then rename over the target. A symlink
 * planted at the target is replaced, never followed. Keeps the old file's permission bits.
 */
export function fileWriteTool(sandbox: WorkspaceSandbox) {
  return defineTool({
    name: 'file_write',
    description:
      'Create or overwrite a file in the workspace with the given contents (atomic: temp file + rename). Creates parent directories.',
    input: fileWriteInput,
    effect: 'write',
    // Writing the same contents twice leaves the same file: safe to repeat on resume.
    idempotent: true,
    async execute(input): Promise<FileWriteOutput> {
      const resolved = await sandbox.resolve(input.path, { access: 'write' });
      const contents = contentsBuffer(input.contents, input.encoding);
      let mode: number | undefined;
      if (resolved.exists) {
        const stats = await sandbox.fileSystem.stat(resolved.absolute).catch((error) => {
          throw fileSystemError(error, input.path, 'write');
        });
        if (!stats.isFile()) {
          throw new ToolError({ message: `${input.path} exists and is not a regular file`, location: input.path });
        }
        mode = stats.mode & 0o7777;
      }
      await commitChanges(
        sandbox.fileSystem,
        [
          {
            absolute: resolved.absolute,
            relative: resolved.relative,
            contents,
            ...(mode === undefined ? {} : { mode }),
          },
        ],
        { createDirectories: input.createDirectories ?? true },
      );
      return { path: resolved.relative, bytes: contents.length, created: !resolved.exists };
    },
  });
}

import { defineTool, ErrorCodes, ToolError } from '@stepwise/core';
import { z } from 'zod';
import { commitChanges } from './commit-changes.js';
import { contentsBuffer } from './file-write-tool.js';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

export const fileCreateInput = z.object({
  path: z.string().describe('Path of the new file, relative to the workspace.'),
  contents: z.string().optional().describe('Initial contents. Default empty.'),
  encoding: z.enum(['utf8', 'base64']).optional().describe('How `contents` is encoded. Default utf8.'),
  createDirectories: z.boolean().optional().describe('Create missing parent directories. Default true.'),
});

export interface FileCreateOutput {
  readonly path: string;
  readonly bytes: number;
}

/**
 * `file_create`: creates a new file and fails if anything (a file, a directory, even a
 * dangling symlink) already has the name. The contents appear at once: written to a
 * temporary file, then hard-linked into place, which fails with EEXIST instead of replacing.
 */
export function fileCreateTool(sandbox: WorkspaceSandbox) {
  return defineTool({
    name: 'file_create',
    description: 'Create a new file in the workspace. Fails if the path already exists (use file_write to overwrite).',
    input: fileCreateInput,
    effect: 'write',
    idempotent: false,
    async execute(input): Promise<FileCreateOutput> {
      // A dangling symlink is followed like file_write does, so one that leads out is refused.
      const resolved = await sandbox.resolve(input.path, { access: 'write' });
      if (resolved.exists) {
        throw new ToolError({
          code: ErrorCodes.TOOL_FAILED,
          message: `${input.path} already exists; use file_write to replace it`,
          location: input.path,
          details: { reason: 'exists' },
        });
      }
      const contents = contentsBuffer(input.contents ?? '', input.encoding);
      await commitChanges(
        sandbox.fileSystem,
        [{ absolute: resolved.absolute, relative: resolved.relative, contents, before: null }],
        { createDirectories: input.createDirectories ?? true },
      );
      return { path: resolved.relative, bytes: contents.length };
    },
  });
}

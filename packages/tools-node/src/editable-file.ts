import { isUtf8 } from 'node:buffer';
import { constants } from 'node:fs';
import { ToolError } from '@stepwise/core';
import type { FileChange } from './commit-changes.js';
import { fileSystemError } from './file-errors.js';
import { openChecked } from './opened-file.js';
import { isBinary } from './text-files.js';
import type { ResolvedPath, WorkspaceSandbox } from './workspace-sandbox.js';

// O_NONBLOCK: opening a FIFO must not wait for a writer; the type check that follows refuses it.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/** A text file read for editing, with what commit needs to detect concurrent changes. */
export interface EditableFile {
  readonly resolved: ResolvedPath;
  readonly buffer: Buffer;
  readonly text: string;
  readonly size: number;
  readonly mtimeMs: number;
  readonly mode: number;
}

/** Reads a UTF-8 text file for editing; binary and non-UTF-8 files are refused (an edit would corrupt them). */
export async function readEditableFile(sandbox: WorkspaceSandbox, input: string): Promise<EditableFile> {
  const resolved = await sandbox.resolve(input, { access: 'write' });
  const handle = await openChecked(sandbox, resolved, READ_FLAGS, 'edit');
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ToolError({ message: `${input} is not a regular file`, location: input });
    const buffer = await handle.readFile();
    if (isBinary(buffer) || !isUtf8(buffer)) {
      throw new ToolError({
        message: `${input} is not UTF-8 text; edit tools only change text files`,
        location: input,
      });
    }
    return {
      resolved,
      buffer,
      text: buffer.toString('utf8'),
      size: stats.size,
      mtimeMs: stats.mtimeMs,
      mode: stats.mode & 0o7777,
    };
  } catch (error) {
    throw fileSystemError(error, input, 'edit');
  } finally {
    await handle.close();
  }
}

/** The commit entry replacing an editable file's contents. */
export function replacement(file: EditableFile, text: string): FileChange {
  return {
    absolute: file.resolved.absolute,
    relative: file.resolved.relative,
    contents: Buffer.from(text, 'utf8'),
    before: file.buffer,
    expected: { size: file.size, mtimeMs: file.mtimeMs },
    mode: file.mode,
  };
}

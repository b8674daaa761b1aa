import { constants } from 'node:fs';
import { defineTool, ErrorCodes, ToolError } from '@stepwise/core';
import { z } from 'zod';
import { fileSystemError } from './file-errors.js';
import { openChecked } from './opened-file.js';
import { decodeText, isBinary, lineEndingOf, utf8Boundary } from './text-files.js';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

const DEFAULT_MAX_BYTES = 1024 * 1024;
const CHUNK_BYTES = 64 * 1024;
// O_NONBLOCK: opening a FIFO must not wait for a writer; the type check that follows refuses it.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

export const fileReadInput = z.object({
  path: z.string().describe('File path relative to the workspace.'),
  startLine: z.number().int().min(1).optional().describe('First line to return (1-based).'),
  endLine: z.number().int().min(1).optional().describe('Last line to return (inclusive).'),
  maxBytes: z
    .number()
    .int()
    .min(1)
    .max(64 * 1024 * 1024)
    .optional()
    .describe('Return at most this many bytes (default 1 MiB); `truncated` says when more was left.'),
  encoding: z
    .enum(['utf8', 'base64'])
    .optional()
    .describe('utf8 (default) refuses binary files; base64 returns any file.'),
});

export interface FileReadOutput {
  readonly path: string;
  readonly contents: string;
  /** `utf8`, `latin1` (text that is not valid UTF-8) or `base64`. */
  readonly encoding: 'utf8' | 'latin1' | 'base64';
  /** Size of the whole file in bytes. */
  readonly size: number;
  /** Bytes returned in `contents`. */
  readonly bytes: number;
  readonly truncated: boolean;
  readonly binary: boolean;
  readonly bom?: boolean;
  readonly lineEnding?: string;
  readonly startLine?: number;
  readonly endLine?: number;
}

/** `file_read`: a file's contents, optionally a line range, capped, binary-aware. */
export function fileReadTool(sandbox: WorkspaceSandbox) {
  return defineTool({
    name: 'file_read',
    description:
      'Read a text file in the workspace. Optional 1-based line range and byte cap; reports size, truncation and encoding. Binary files need encoding "base64".',
    input: fileReadInput,
    effect: 'read',
    idempotent: true,
    async execute(input, context): Promise<FileReadOutput> {
      if (input.startLine !== undefined && input.endLine !== undefined && input.endLine < input.startLine) {
        throw new ToolError({
          code: ErrorCodes.ARGUMENTS_INVALID,
          message: `endLine (${input.endLine}) is before startLine (${input.startLine})`,
          location: input.path,
        });
      }
      const resolved = await sandbox.resolve(input.path);
      const maxBytes = input.maxBytes ?? DEFAULT_MAX_BYTES;
      const handle = await openChecked(sandbox, resolved, READ_FLAGS, 'read');
      try {
        const stats = await handle.stat();
        if (stats.isDirectory()) {
          throw new ToolError({ message: `${input.path} is a directory; use dir_list`, location: input.path });
        }
        if (!stats.isFile()) {
          throw new ToolError({ message: `${input.path} is not a regular file`, location: input.path });
        }
        const ranged = input.startLine !== undefined || input.endLine !== undefined;
        const slice = ranged
          ? await readLines(
              handle,
              input.startLine ?? 1,
              input.endLine ?? Number.POSITIVE_INFINITY,
              maxBytes,
              context.signal,
            )
          : await readHead(handle, stats.size, maxBytes);
        const binary = isBinary(slice.buffer);
        if (input.encoding === 'base64') {
          return {
            path: resolved.relative,
            contents: slice.buffer.toString('base64'),
            encoding: 'base64',
            size: stats.size,
            bytes: slice.buffer.length,
            truncated: slice.truncated,
            binary,
            ...(ranged ? { startLine: slice.startLine, endLine: slice.endLine } : {}),
          };
        }
        if (binary) {
          throw new ToolError({
            message: `${input.path} is a binary file; pass encoding "base64" to read it`,
            location: input.path,
            details: { size: stats.size },
          });
        }
        const decoded = decodeText(slice.buffer);
        return {
          path: resolved.relative,
          contents: decoded.text,
          encoding: decoded.encoding,
          size: stats.size,
          bytes: slice.buffer.length,
          truncated: slice.truncated,
          binary: false,
          bom: decoded.bom,
          lineEnding: lineEndingOf(decoded.text),
          ...(ranged ? { startLine: slice.startLine, endLine: slice.endLine } : {}),
        };
      } catch (error) {
        throw fileSystemError(error, input.path, 'read');
      } finally {
        await handle.close();
      }
    },
  });
}

type Handle = Awaited<ReturnType<WorkspaceSandbox['fileSystem']['open']>>;

interface Slice {
  buffer: Buffer;
  truncated: boolean;
  startLine?: number;
  endLine?: number;
}

async function readHead(handle: Handle, size: number, maxBytes: number): Promise<Slice> {
  // One byte more than allowed tells truncation apart from a file that fits exactly.
  const wanted = Math.min(size, maxBytes) + 1;
  const buffer = Buffer.allocUnsafe(wanted);
  let filled = 0;
  while (filled < wanted) {
    const { bytesRead } = await handle.read(buffer, filled, wanted - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  const truncated = filled > maxBytes;
  const end = truncated ? utf8Boundary(buffer.subarray(0, filled), maxBytes) : filled;
  return { buffer: buffer.subarray(0, end), truncated };
}

/** Streams the file in chunks and keeps only the requested lines, so huge files stay cheap. */
async function readLines(
  handle: Handle,
  startLine: number,
  endLine: number,
  maxBytes: number,
  signal: AbortSignal,
): Promise<Slice> {
  const parts: Buffer[] = [];
  let kept = 0;
  let line = 1;
  let position = 0;
  let truncated = false;
  let lastLine = startLine - 1;
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  reading: for (;;) {
    signal.throwIfAborted();
    const { bytesRead } = await handle.read(chunk, 0, CHUNK_BYTES, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    let from = 0;
    while (from < bytesRead) {
      const newline = chunk.indexOf(10, from);
      const to = newline === -1 || newline >= bytesRead ? bytesRead : newline + 1;
      if (line >= startLine && line <= endLine) {
        const piece = chunk.subarray(from, to);
        if (kept + piece.length > maxBytes) {
          parts.push(Buffer.from(piece.subarray(0, utf8Boundary(piece, maxBytes - kept))));
          truncated = true;
          break reading;
        }
        parts.push(Buffer.from(piece));
        kept += piece.length;
        lastLine = line;
      }
      if (to === newline + 1 && newline !== -1 && newline < bytesRead) line++;
      if (line > endLine) break reading;
      from = to;
    }
  }
  return { buffer: Buffer.concat(parts), truncated, startLine, endLine: Math.max(lastLine, startLine - 1) };
}

import { defineTool, ErrorCodes, ToolError } from '@stepwise/core';
import { applyPatch, parsePatch, type StructuredPatch } from 'diff';
import { z } from 'zod';
import { commitChanges, type FileChange } from './commit-changes.js';
import { readEditableFile, replacement } from './editable-file.js';
import { unifiedDiff } from './unified-diff.js';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

export const filePatchInput = z.object({
  patch: z.string().min(1).describe('A unified diff (as `git diff` or `diff -u` print it); may change several files.'),
  fuzzFactor: z
    .number()
    .int()
    .min(0)
    .max(3)
    .optional()
    .describe('Context lines allowed to differ per hunk. Default 0.'),
  dryRun: z.boolean().optional().describe('Check that the patch applies without writing. Default false.'),
});

export interface FilePatchOutput {
  readonly files: { readonly path: string; readonly action: 'create' | 'modify' | 'delete' }[];
  readonly diff: string;
  readonly dryRun: boolean;
}

const DEV_NULL = '/dev/null';

/** `a/src/x.ts` → `src/x.ts` for git-style headers; plain `diff -u` names pass through. */
function stripPrefix(name: string | undefined, prefix: 'a/' | 'b/', gitStyle: boolean): string | undefined {
  if (name === undefined || name === DEV_NULL) return name;
  return gitStyle && name.startsWith(prefix) ? name.slice(2) : name;
}

function patchError(message: string, location: string, details?: Record<string, unknown>): ToolError {
  return new ToolError({ code: ErrorCodes.EDIT_CONFLICT, message, location, ...(details ? { details } : {}) });
}

function hunkHeader(hunk: StructuredPatch['hunks'][number]): string {
  return `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
}

/** Applies one file's patch; on failure finds the first hunk that does not fit, for the message. */
function applyFilePatch(source: string, patch: StructuredPatch, fuzzFactor: number, name: string): string {
  const result = applyPatch(source, patch, { fuzzFactor });
  if (result !== false) return result;
  let failed = patch.hunks.length - 1;
  for (let count = 1; count <= patch.hunks.length; count++) {
    if (applyPatch(source, { ...patch, hunks: patch.hunks.slice(0, count) }, { fuzzFactor }) === false) {
      failed = count - 1;
      break;
    }
  }
  const hunk = patch.hunks[failed];
  throw patchError(
    `hunk ${failed + 1} of ${patch.hunks.length} (${hunk ? hunkHeader(hunk) : ''}) does not apply to ${name}; its context or removed lines are not in the file. Nothing was changed.`,
    name,
    { hunk: failed + 1, expected: hunk?.lines.filter((line) => !line.startsWith('+')).join('\n') },
  );
}

/** The file patches of the input, or an ARGUMENTS_INVALID error when it does not parse or holds no hunk. */
function parsePatches(text: string): StructuredPatch[] {
  let patches: StructuredPatch[];
  try {
    patches = parsePatch(text).filter((patch) => patch.hunks.length > 0 || patch.oldFileName);
  } catch (error) {
    throw new ToolError({
      code: ErrorCodes.ARGUMENTS_INVALID,
      message: `the patch does not parse: ${error instanceof Error ? error.message : error}`,
      location: 'patch',
    });
  }
  if (patches.length === 0 || patches.every((patch) => patch.hunks.length === 0)) {
    throw new ToolError({
      code: ErrorCodes.ARGUMENTS_INVALID,
      message: 'the patch contains no hunks',
      location: 'patch',
    });
  }
  return patches;
}

/** The workspace names a file patch reads and writes (`/dev/null` on the side of a create or delete). */
function patchNames(patch: StructuredPatch): {
  oldName: string | undefined;
  newName: string | undefined;
  name: string;
} {
  const gitStyle = (patch.oldFileName?.startsWith('a/') ?? true) || (patch.newFileName?.startsWith('b/') ?? true);
  const oldName = stripPrefix(patch.oldFileName, 'a/', gitStyle);
  const newName = stripPrefix(patch.newFileName, 'b/', gitStyle);
  if (oldName === undefined && newName === undefined) {
    throw patchError('a file in the patch has no --- / +++ header', 'patch');
  }
  if (
    oldName !== undefined &&
    newName !== undefined &&
    oldName !== DEV_NULL &&
    newName !== DEV_NULL &&
    oldName !== newName
  ) {
    throw patchError(`renames are not supported (${oldName} → ${newName}); patch and delete separately`, newName);
  }
  const name = (newName === DEV_NULL || newName === undefined ? oldName : newName) as string;
  return { oldName, newName, name };
}

interface PatchedFile {
  readonly change: FileChange;
  readonly file: FilePatchOutput['files'][number];
  readonly diff: string;
}

/** One file's change, checked against the workspace; `seen` refuses a file patched twice. */
async function patchFile(
  sandbox: WorkspaceSandbox,
  patch: StructuredPatch,
  fuzzFactor: number,
  seen: Set<string>,
): Promise<PatchedFile> {
  const { oldName, newName, name } = patchNames(patch);
  if (oldName === DEV_NULL) {
    const resolved = await sandbox.resolve(name, { access: 'write', followFinalSymlink: false });
    if (resolved.exists) throw patchError(`${name} already exists; the patch creates it`, name);
    const created = applyFilePatch('', patch, fuzzFactor, name);
    const change = {
      absolute: resolved.absolute,
      relative: resolved.relative,
      contents: Buffer.from(created, 'utf8'),
      before: null,
    };
    if (seen.has(resolved.absolute)) throw patchError(`${name} appears twice in the patch`, name);
    seen.add(resolved.absolute);
    return {
      change,
      file: { path: resolved.relative, action: 'create' },
      diff: unifiedDiff(DEV_NULL, `b/${resolved.relative}`, '', created),
    };
  }
  const file = await readEditableFile(sandbox, name);
  if (seen.has(file.resolved.absolute)) throw patchError(`${name} appears twice in the patch`, name);
  seen.add(file.resolved.absolute);
  const patched = applyFilePatch(file.text, patch, fuzzFactor, name);
  const relative = file.resolved.relative;
  if (newName === DEV_NULL) {
    if (patched !== '') throw patchError(`${name} is not empty after the patch that deletes it`, name);
    return {
      change: { ...replacement(file, ''), contents: null },
      file: { path: relative, action: 'delete' },
      diff: unifiedDiff(`a/${relative}`, DEV_NULL, file.text, ''),
    };
  }
  return {
    change: replacement(file, patched),
    file: { path: relative, action: 'modify' },
    diff: unifiedDiff(`a/${relative}`, `b/${relative}`, file.text, patched),
  };
}

/**
 * `file_patch`: applies a unified diff to the workspace — every file or none. Creates
 * (`--- /dev/null`) and deletes (`+++ /dev/null`) files too. Paths go through the sandbox.
 */
export function filePatchTool(sandbox: WorkspaceSandbox) {
  return defineTool({
    name: 'file_patch',
    description:
      'Apply a unified diff (git diff format) to workspace files. All files change together or none does; a hunk that does not fit fails the call.',
    input: filePatchInput,
    effect: 'write',
    idempotent: false,
    async execute(input): Promise<FilePatchOutput> {
      const patches = parsePatches(input.patch);
      const seen = new Set<string>();
      const patched: PatchedFile[] = [];
      // One file after the other: a file patched twice is refused before anything is written.
      for (const patch of patches) patched.push(await patchFile(sandbox, patch, input.fuzzFactor ?? 0, seen));
      const changes = patched.map((entry) => entry.change);
      if (!input.dryRun) await commitChanges(sandbox.fileSystem, changes, { createDirectories: true });
      return {
        files: patched.map((entry) => entry.file),
        diff: patched.map((entry) => entry.diff).join(''),
        dryRun: input.dryRun ?? false,
      };
    },
  });
}

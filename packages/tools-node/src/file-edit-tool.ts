import { defineTool, ErrorCodes, ToolError } from '@stepwise/core';
import { z } from 'zod';
import { commitChanges, type FileChange } from './commit-changes.js';
import { type EditableFile, readEditableFile, replacement } from './editable-file.js';
import { applySearchReplace, type EditProblem, type SearchReplaceEdit } from './search-replace.js';
import { unifiedDiff } from './unified-diff.js';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

export const fileEditInput = z.object({
  path: z.string().optional().describe('Default file for edits that do not name one.'),
  edits: z
    .array(
      z.object({
        path: z.string().optional().describe('File to edit, relative to the workspace (default: the top-level path).'),
        search: z.string().min(1).describe('Exact text to find; must occur exactly once (whitespace included).'),
        replace: z.string().describe('Text that replaces it (may be empty to delete).'),
      }),
    )
    .min(1)
    .max(1000)
    .describe('Applied in order; all files change together or none does.'),
  dryRun: z.boolean().optional().describe('Validate and return the diff without writing. Default false.'),
});

export interface FileEditOutput {
  readonly files: { readonly path: string; readonly edits: number; readonly changed: boolean }[];
  /** Unified diff of every change (git style headers). */
  readonly diff: string;
  readonly dryRun: boolean;
}

/**
 * `file_edit`: search/replace edits over one or more files. Every edit is checked first
 * (exact-once rule); then all files are written together — if any write fails, every file
 * already replaced is restored. Tabs, CRLF and trailing newlines stay exactly as they were.
 */
export function fileEditTool(sandbox: WorkspaceSandbox) {
  return defineTool({
    name: 'file_edit',
    description:
      'Edit files with search/replace blocks. Each search text must match exactly once (copy it exactly, whitespace included). Several edits and files are applied atomically; returns a unified diff.',
    input: fileEditInput,
    effect: 'write',
    idempotent: false,
    async execute(input): Promise<FileEditOutput> {
      const byPath = new Map<string, SearchReplaceEdit[]>();
      for (const [index, edit] of input.edits.entries()) {
        const path = edit.path ?? input.path;
        if (path === undefined) {
          throw new ToolError({
            code: ErrorCodes.ARGUMENTS_INVALID,
            message: `edit ${index} names no file: give edits[${index}].path or a top-level path`,
            location: `edits/${index}/path`,
          });
        }
        const list = byPath.get(path) ?? [];
        list.push({ search: edit.search, replace: edit.replace, index });
        byPath.set(path, list);
      }
      // Two spellings of one file (a/b.ts, ./a/b.ts) must be edited as one file.
      const files = new Map<string, { file: EditableFile; edits: SearchReplaceEdit[] }>();
      for (const [path, edits] of byPath) {
        const file = await readEditableFile(sandbox, path);
        const existing = files.get(file.resolved.absolute);
        if (existing) existing.edits.push(...edits);
        else files.set(file.resolved.absolute, { file, edits });
      }
      const problems: EditProblem[] = [];
      const changes: FileChange[] = [];
      const summary: FileEditOutput['files'] = [];
      const diffs: string[] = [];
      for (const { file, edits } of files.values()) {
        edits.sort((left, right) => left.index - right.index);
        const outcome = applySearchReplace(file.resolved.relative, file.text, edits);
        if (!outcome.ok) {
          problems.push(...outcome.problems);
          continue;
        }
        const changed = outcome.text !== file.text;
        summary.push({ path: file.resolved.relative, edits: edits.length, changed });
        if (!changed) continue;
        changes.push(replacement(file, outcome.text));
        const name = file.resolved.relative;
        diffs.push(unifiedDiff(`a/${name}`, `b/${name}`, file.text, outcome.text));
      }
      if (problems.length > 0) {
        throw new ToolError({
          code: ErrorCodes.EDIT_CONFLICT,
          message:
            problems.length === 1
              ? (problems[0] as EditProblem).message
              : `${problems.length} edits did not apply; nothing was changed:\n${problems.map((problem) => problem.message).join('\n')}`,
          location: problems[0]?.path ?? '',
          details: { problems },
        });
      }
      if (!input.dryRun) await commitChanges(sandbox.fileSystem, changes);
      return { files: summary, diff: diffs.join(''), dryRun: input.dryRun ?? false };
    },
  });
}

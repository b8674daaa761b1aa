import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { unifiedDiff } from './unified-diff.js';

/** What a file-changing call would do, shown before a person approves it. */
export interface ChangePreview {
  /** Unified diff of every file the call would change (may be empty). */
  readonly diff: string;
  /** Problems found while previewing (an edit that will not apply, a path outside the workspace). */
  readonly notes: readonly string[];
}

interface Edit {
  readonly path?: unknown;
  readonly search?: unknown;
  readonly replace?: unknown;
}

/** Reads a workspace file for the preview, refusing (not following) paths that leave the workspace. */
async function readWorkspaceFile(workspace: string, file: string): Promise<{ text?: string; note?: string }> {
  const root = await realpath(workspace).catch(() => path.resolve(workspace));
  const target = path.resolve(root, file);
  let real = target;
  try {
    real = await realpath(target);
  } catch {
    return { text: '' };
  }
  const relative = path.relative(root, real);
  if (relative.startsWith('..') || path.isAbsolute(relative)) {
    return { note: `${file} is outside the workspace: the tool will refuse it` };
  }
  try {
    return { text: await readFile(real, 'utf8') };
  } catch (error) {
    return { note: `cannot read ${file}: ${(error as Error).message}` };
  }
}

/** Replaces the single occurrence of `search`, as `file_edit` will (CRLF files accept LF text). */
function applyEdit(text: string, edit: { search: string; replace: string }): string | undefined {
  let { search, replace } = edit;
  if (text.includes('\r\n') && search.includes('\n') && !search.includes('\r\n')) {
    search = search.replace(/\n/g, '\r\n');
    replace = replace.replace(/\r?\n/g, '\r\n');
  }
  const first = text.indexOf(search);
  if (first === -1 || text.indexOf(search, first + 1) !== -1) return undefined;
  return text.slice(0, first) + replace + text.slice(first + search.length);
}

/**
 * The would-be change of `file_write`, `file_create`, `file_edit` or `file_patch` (or a tool
 * whose name ends with one of those, for prefixed plugins), computed from the current files
 * without touching them. `undefined` for other tools.
 */
export async function previewChange(
  tool: string,
  args: Record<string, unknown>,
  workspace: string,
): Promise<ChangePreview | undefined> {
  const kind = ['file_write', 'file_create', 'file_edit', 'file_patch'].find(
    (name) => tool === name || tool.endsWith(`_${name}`),
  );
  if (!kind) return undefined;
  if (kind === 'file_patch') {
    return { diff: typeof args.patch === 'string' ? args.patch : '', notes: [] };
  }
  if (kind === 'file_write' || kind === 'file_create') {
    if (typeof args.path !== 'string') return undefined;
    const contents = typeof args.contents === 'string' ? args.contents : '';
    if (args.encoding === 'base64') return { diff: '', notes: [`binary contents for ${args.path} (base64)`] };
    const current = await readWorkspaceFile(workspace, args.path);
    if (current.note) return { diff: '', notes: [current.note] };
    return { diff: unifiedDiff(current.text ?? '', contents, { path: args.path }), notes: [] };
  }
  const edits = Array.isArray(args.edits) ? (args.edits as Edit[]) : [];
  const byFile = new Map<string, { search: string; replace: string; index: number }[]>();
  for (const [index, edit] of edits.entries()) {
    const file = typeof edit.path === 'string' ? edit.path : typeof args.path === 'string' ? args.path : undefined;
    if (!file || typeof edit.search !== 'string' || typeof edit.replace !== 'string') continue;
    const list = byFile.get(file) ?? [];
    list.push({ search: edit.search, replace: edit.replace, index });
    byFile.set(file, list);
  }
  const diffs: string[] = [];
  const notes: string[] = [];
  for (const [file, fileEdits] of byFile) {
    const current = await readWorkspaceFile(workspace, file);
    if (current.note) {
      notes.push(current.note);
      continue;
    }
    let text = current.text ?? '';
    for (const edit of fileEdits) {
      const next = applyEdit(text, edit);
      if (next === undefined) {
        notes.push(`edit ${edit.index} does not match exactly once in ${file}: the tool will refuse the whole call`);
        continue;
      }
      text = next;
    }
    diffs.push(unifiedDiff(current.text ?? '', text, { path: file }));
  }
  return { diff: diffs.join(''), notes };
}

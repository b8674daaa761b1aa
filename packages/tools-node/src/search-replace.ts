import { lineEndingOf, lineOfOffset, lineStartsOf } from './text-files.js';

export interface SearchReplaceEdit {
  readonly search: string;
  readonly replace: string;
  /** Position of the edit in the tool's input, for error messages. */
  readonly index: number;
}

/** Why an edit did not apply. */
export interface EditProblem {
  readonly path: string;
  readonly edit: number;
  readonly reason: 'not-found' | 'ambiguous';
  readonly message: string;
  /** Ambiguous: 1-based line of every match. */
  readonly lines?: number[];
  /** Not found: the region of the file most like the search text. */
  readonly closest?: { readonly startLine: number; readonly text: string; readonly similarity: number };
}

export type EditOutcome = { ok: true; text: string } | { ok: false; problems: EditProblem[] };

/** Every start offset of `needle` in `text`, overlapping matches included. */
function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + 1)) {
    found.push(index);
    if (found.length > 100) break;
  }
  return found;
}

/**
 * Applies search/replace edits in order; each search text must match exactly once in the
 * text as the earlier edits left it. A file with CRLF line endings accepts search and
 * replace texts written with LF: they are converted, so the file keeps its CRLF.
 */
export function applySearchReplace(path: string, original: string, edits: readonly SearchReplaceEdit[]): EditOutcome {
  const crlf = lineEndingOf(original) === 'crlf';
  const problems: EditProblem[] = [];
  let text = original;
  for (const edit of edits) {
    let search = edit.search;
    let replace = edit.replace;
    if (crlf && search.includes('\n') && !search.includes('\r\n')) {
      search = search.replace(/\n/g, '\r\n');
      replace = replace.replace(/\r?\n/g, '\r\n');
    }
    const found = occurrences(text, search);
    if (found.length === 1) {
      const at = found[0] as number;
      text = text.slice(0, at) + replace + text.slice(at + search.length);
      continue;
    }
    if (found.length === 0) {
      const closest = closestRegion(text, edit.search);
      const hint = closest
        ? closest.similarity === 1
          ? ` It matches at line ${closest.startLine} if whitespace is ignored: copy indentation and line endings exactly.`
          : ` The closest text (${Math.round(closest.similarity * 100)}% similar) starts at line ${closest.startLine}:\n${closest.text}`
        : '';
      problems.push({
        path,
        edit: edit.index,
        reason: 'not-found',
        message: `edit ${edit.index}: the search text was not found in ${path}.${hint}`,
        ...(closest ? { closest } : {}),
      });
      continue;
    }
    const starts = lineStartsOf(text);
    const lines = found.map((offset) => lineOfOffset(starts, offset));
    problems.push({
      path,
      edit: edit.index,
      reason: 'ambiguous',
      message: `edit ${edit.index}: the search text matches ${found.length > 100 ? 'more than 100' : found.length} times in ${path} (lines ${lines.join(', ')}); add surrounding lines so it matches exactly once`,
      lines,
    });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, text };
}

function bigrams(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (let index = 0; index < text.length - 1; index++) {
    const pair = text.slice(index, index + 2);
    counts.set(pair, (counts.get(pair) ?? 0) + 1);
  }
  return counts;
}

/** Dice coefficient over character bigrams: 1 for equal strings, 0 for nothing in common. */
function similarity(left: string, right: string, rightBigrams: Map<string, number>): number {
  if (left === right) return 1;
  if (left.length < 2 || right.length < 2) return 0;
  let shared = 0;
  const seen = new Map<string, number>();
  for (let index = 0; index < left.length - 1; index++) {
    const pair = left.slice(index, index + 2);
    const used = seen.get(pair) ?? 0;
    if (used < (rightBigrams.get(pair) ?? 0)) {
      shared++;
      seen.set(pair, used + 1);
    }
  }
  return (2 * shared) / (left.length - 1 + right.length - 1);
}

const MAX_FUZZY_LINES = 200_000;
const SHOWN_CONTEXT = 2;

/** The region of `text` most like `search`, with numbered lines, for the not-found message. */
export function closestRegion(
  text: string,
  search: string,
): { startLine: number; text: string; similarity: number } | undefined {
  const fileLines = text.split('\n').map((line) => line.replace(/\r$/, ''));
  const searchLines = search
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((line) => line.trim());
  while (searchLines.length > 0 && searchLines[0] === '') searchLines.shift();
  while (searchLines.length > 0 && searchLines[searchLines.length - 1] === '') searchLines.pop();
  if (searchLines.length === 0 || fileLines.length === 0) return undefined;
  const trimmed = fileLines.slice(0, MAX_FUZZY_LINES).map((line) => line.trim());

  // Whitespace-only difference: every trimmed line matches in sequence.
  for (let start = 0; start + searchLines.length <= trimmed.length; start++) {
    if (trimmed[start] !== searchLines[0]) continue;
    if (searchLines.every((line, offset) => trimmed[start + offset] === line)) {
      return { startLine: start + 1, text: numbered(fileLines, start, searchLines.length), similarity: 1 };
    }
  }

  let anchorIndex = 0;
  for (let index = 1; index < searchLines.length; index++) {
    if ((searchLines[index] ?? '').length > (searchLines[anchorIndex] ?? '').length) anchorIndex = index;
  }
  const anchor = searchLines[anchorIndex] ?? '';
  const anchorBigrams = bigrams(anchor);
  let best = -1;
  let bestScore = 0;
  for (let index = 0; index < trimmed.length; index++) {
    const line = trimmed[index] ?? '';
    // Cheap bound: Dice cannot exceed 2·min/(sum) of the lengths.
    const bound = (2 * Math.min(line.length, anchor.length)) / Math.max(1, line.length + anchor.length);
    if (bound <= bestScore) continue;
    const score = similarity(line, anchor, anchorBigrams);
    if (score > bestScore) {
      bestScore = score;
      best = index;
    }
  }
  if (best === -1 || bestScore < 0.3) return undefined;
  const start = Math.max(0, best - anchorIndex);
  return {
    startLine: start + 1,
    text: numbered(fileLines, start, searchLines.length),
    similarity: Math.min(bestScore, 0.99),
  };
}

function numbered(lines: readonly string[], start: number, count: number): string {
  const from = Math.max(0, start - SHOWN_CONTEXT);
  const to = Math.min(lines.length, start + count + SHOWN_CONTEXT);
  const width = String(to).length;
  const shown: string[] = [];
  for (let index = from; index < to; index++) {
    shown.push(`${String(index + 1).padStart(width)}| ${lines[index]}`);
  }
  return shown.join('\n');
}

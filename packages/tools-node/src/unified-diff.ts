import { FILE_HEADERS_ONLY, formatPatch, structuredPatch } from 'diff';

/** Splits text into lines that keep their line endings, so joining them gives the text back. */
function linesOf(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', start)) {
    lines.push(text.slice(start, index + 1));
    start = index + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/**
 * A unified diff (git style `--- a/… +++ b/…` headers) of `before` → `after`. The common
 * head and tail are cut off before diffing and the hunks shifted back, so a one-line edit
 * of a 5 MB file costs a scan, not a Myers diff of the whole file.
 */
export function unifiedDiff(oldName: string, newName: string, before: string, after: string, context = 3): string {
  if (before === after) return '';
  const oldLines = linesOf(before);
  const newLines = linesOf(after);
  let prefix = 0;
  while (prefix < oldLines.length && prefix < newLines.length && oldLines[prefix] === newLines[prefix]) prefix++;
  let suffix = 0;
  while (
    suffix < oldLines.length - prefix &&
    suffix < newLines.length - prefix &&
    oldLines[oldLines.length - 1 - suffix] === newLines[newLines.length - 1 - suffix]
  ) {
    suffix++;
  }
  const start = Math.max(0, prefix - context);
  const keptSuffix = Math.max(0, suffix - context);
  const patch = structuredPatch(
    oldName,
    newName,
    oldLines.slice(start, oldLines.length - keptSuffix).join(''),
    newLines.slice(start, newLines.length - keptSuffix).join(''),
    undefined,
    undefined,
    { context },
  );
  for (const hunk of patch.hunks) {
    hunk.oldStart += start;
    hunk.newStart += start;
  }
  return formatPatch(patch, FILE_HEADERS_ONLY);
}

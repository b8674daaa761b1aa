/** One line of an edit script. */
interface DiffLine {
  readonly kind: ' ' | '-' | '+';
  readonly text: string;
}

/** Above this many changed lines the middle is shown as one replacement instead of searched for an optimal diff. */
const MYERS_LIMIT = 5_000;

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Myers' O(ND) shortest edit script over lines. */
function myers(before: readonly string[], after: readonly string[]): DiffLine[] {
  const n = before.length;
  const m = after.length;
  const max = n + m;
  const offset = max + 1;
  let frontier = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = false;
  for (let depth = 0; depth <= max && !found; depth++) {
    trace.push(frontier.slice());
    const next = frontier.slice();
    for (let diagonal = -depth; diagonal <= depth; diagonal += 2) {
      const down =
        diagonal === -depth ||
        (diagonal !== depth &&
          (frontier[offset + diagonal - 1] as number) < (frontier[offset + diagonal + 1] as number));
      let x = down ? (frontier[offset + diagonal + 1] as number) : (frontier[offset + diagonal - 1] as number) + 1;
      let y = x - diagonal;
      while (x < n && y < m && before[x] === after[y]) {
        x += 1;
        y += 1;
      }
      next[offset + diagonal] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
    frontier = next;
  }
  trace.push(frontier);
  // Walk the trace backwards from (n, m) to recover the script.
  const script: DiffLine[] = [];
  let x = n;
  let y = m;
  for (let depth = trace.length - 2; depth >= 0; depth--) {
    const row = trace[depth] as Int32Array;
    const diagonal = x - y;
    const down =
      diagonal === -depth ||
      (diagonal !== depth && (row[offset + diagonal - 1] as number) < (row[offset + diagonal + 1] as number));
    const previousDiagonal = down ? diagonal + 1 : diagonal - 1;
    const previousX = depth === 0 ? 0 : (row[offset + previousDiagonal] as number);
    const previousY = depth === 0 ? 0 : previousX - previousDiagonal;
    while (x > previousX && y > previousY) {
      x -= 1;
      y -= 1;
      script.push({ kind: ' ', text: before[x] as string });
    }
    if (depth === 0) break;
    if (down) {
      y -= 1;
      script.push({ kind: '+', text: after[y] as string });
    } else {
      x -= 1;
      script.push({ kind: '-', text: before[x] as string });
    }
  }
  while (x > 0 && y > 0) {
    x -= 1;
    y -= 1;
    script.push({ kind: ' ', text: before[x] as string });
  }
  return script.reverse();
}

function editScript(before: readonly string[], after: readonly string[]): DiffLine[] {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start += 1;
  let endBefore = before.length;
  let endAfter = after.length;
  while (endBefore > start && endAfter > start && before[endBefore - 1] === after[endAfter - 1]) {
    endBefore -= 1;
    endAfter -= 1;
  }
  const middleBefore = before.slice(start, endBefore);
  const middleAfter = after.slice(start, endAfter);
  const middle =
    middleBefore.length + middleAfter.length > MYERS_LIMIT
      ? [
          ...middleBefore.map((text) => ({ kind: '-' as const, text })),
          ...middleAfter.map((text) => ({ kind: '+' as const, text })),
        ]
      : myers(middleBefore, middleAfter);
  return [
    ...before.slice(0, start).map((text) => ({ kind: ' ' as const, text })),
    ...middle,
    ...before.slice(endBefore).map((text) => ({ kind: ' ' as const, text })),
  ];
}

export interface UnifiedDiffOptions {
  /** Shown in the `---`/`+++` header. Default `file`. */
  readonly path?: string;
  /** Unchanged lines around each change. Default 3. */
  readonly context?: number;
}

/**
 * A unified diff (the `diff -u` format) of two texts, or `""` when they are equal.
 * A missing "before" (a new file) is the empty string.
 */
export function unifiedDiff(before: string, after: string, options: UnifiedDiffOptions = {}): string {
  if (before === after) return '';
  const context = options.context ?? 3;
  const name = options.path ?? 'file';
  const script = editScript(splitLines(before), splitLines(after));
  const output = [`--- a/${name}`, `+++ b/${name}`];
  let index = 0;
  while (index < script.length) {
    while (index < script.length && script[index]?.kind === ' ') index += 1;
    if (index >= script.length) break;
    const hunkStart = Math.max(0, index - context);
    let hunkEnd = index;
    // Extend the hunk while the next change is within 2 × context unchanged lines.
    let cursor = index;
    while (cursor < script.length) {
      if (script[cursor]?.kind !== ' ') {
        hunkEnd = cursor + 1;
        cursor += 1;
        continue;
      }
      let run = 0;
      while (cursor + run < script.length && script[cursor + run]?.kind === ' ') run += 1;
      if (cursor + run >= script.length || run > context * 2) break;
      cursor += run;
    }
    const end = Math.min(script.length, hunkEnd + context);
    let oldStart = 1;
    let newStart = 1;
    for (let position = 0; position < hunkStart; position++) {
      if (script[position]?.kind !== '+') oldStart += 1;
      if (script[position]?.kind !== '-') newStart += 1;
    }
    const hunk = script.slice(hunkStart, end);
    const oldCount = hunk.filter((line) => line.kind !== '+').length;
    const newCount = hunk.filter((line) => line.kind !== '-').length;
    output.push(
      `@@ -${oldCount === 0 ? oldStart - 1 : oldStart},${oldCount} +${newCount === 0 ? newStart - 1 : newStart},${newCount} @@`,
    );
    for (const line of hunk) output.push(`${line.kind}${line.text}`);
    index = end;
  }
  return `${output.join('\n')}\n`;
}

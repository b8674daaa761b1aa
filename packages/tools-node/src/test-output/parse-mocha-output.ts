import type { RawFailure } from './failing-test.js';

/** The summary line the failure list follows: `  3 failing`. */
const FAILING = /^\s*\d+ failing$/;
/** A failure's first title line: `  1) suite` (more titles follow) or `  1) test:`. */
const HEADER = /^ {2}(\d+)\) (.+)$/;
/** A stack frame naming a file: `at name (file:///dir/test.mjs:5:10)` or `at /dir/test.js:5:10`. */
const FRAME = /^\s*at (?:.*? \()?(?:file:\/\/)?([^\s()]+?):\d+:\d+\)?$/;
const INTERNAL = /^node:|\/node_modules\//;
/** Mocha's TAP reporter: `not ok 3 suite test` (node:test's TAP puts ` - ` before the name). */
const TAP_NOT_OK = /^not ok (\d+) (?!- )(.+?)(?:\s+# .*)?$/;
const TAP_END = /^(?:(?:not )?ok \d+ |# |\d+\.\.\d+$)/;
/** Mocha calls a test with its `Context` as `this`: other TAP producers (tape, node:test) name theirs otherwise. */
const MOCHA_FRAME = /^\s*at Context\.<anonymous> /;

/** The test file mocha shows: it prints none but in the stack, so the first frame outside Node and node_modules. */
function fileOf(lines: readonly string[]): string | undefined {
  for (const line of lines) {
    const frame = FRAME.exec(line)?.[1];
    if (frame !== undefined && !INTERNAL.test(frame)) return frame;
  }
  return undefined;
}

/**
 * The titles of a failure: the header's and, for a test inside suites, one line per level below it,
 * each indented two spaces more (`       test:` under `  4) suite`); the last one ends with `:`.
 * Returns the titles and the index of the line after them.
 */
function titlesAt(lines: readonly string[], start: number, first: string): [string[], number] {
  const titles = [first];
  let index = start + 1;
  while (!(titles.at(-1) as string).endsWith(':')) {
    const indent = ' '.repeat(5 + 2 * titles.length);
    const line = lines[index];
    if (line === undefined || !line.startsWith(indent) || line[indent.length] === ' ') break;
    titles.push(line.slice(indent.length));
    index++;
  }
  titles.push((titles.pop() as string).replace(/:$/, ''));
  return [titles, index];
}

/**
 * Mocha's default `spec` reporter: after `N failing`, one `  N) suite › test:` block per failure
 * (numbered from 1, titles on indented lines), the message, a diff and the stack.
 */
export function parseMochaSpec(lines: readonly string[]): RawFailure[] {
  const start = lines.findIndex((line) => FAILING.test(line));
  if (start < 0) return [];
  const blocks: { titles: string[]; lines: string[] }[] = [];
  for (let index = start + 1; index < lines.length; index++) {
    const header = HEADER.exec(lines[index] as string);
    // Numbered in order: a `  2) …` line inside a message is not the next failure.
    if (header && Number(header[1]) === blocks.length + 1) {
      const [titles, next] = titlesAt(lines, index, header[2] as string);
      blocks.push({ titles, lines: [] });
      index = next - 1;
      continue;
    }
    blocks.at(-1)?.lines.push(lines[index] as string);
  }
  return blocks.map((block) => ({ name: block.titles.join(' > '), file: fileOf(block.lines), lines: block.lines }));
}

/**
 * Mocha's `tap` reporter: `not ok N title` lines, each followed by the error indented two spaces.
 * It joins suite and test titles with spaces, so the name is that full title (`strings upper cases a word`).
 * Read only when a stack shows mocha's test `Context`.
 */
export function parseMochaTap(lines: readonly string[]): RawFailure[] {
  if (!lines.some((line) => MOCHA_FRAME.test(line))) return [];
  const failures: RawFailure[] = [];
  let current: RawFailure | undefined;
  for (const line of lines) {
    const failed = TAP_NOT_OK.exec(line);
    if (failed) {
      current = { name: failed[2] as string, file: undefined, lines: [] };
      failures.push(current);
      continue;
    }
    if (TAP_END.test(line)) current = undefined;
    else current?.lines.push(line);
  }
  return failures.map((failure) => ({ ...failure, file: fileOf(failure.lines) }));
}

import { INTERNAL_FRAME, type RawFailure } from './failing-test.js';

/** The summary line a failure list follows: `  3 failing`. `npm test -ws` prints one per mocha run. */
const FAILING = /^\s*(\d+) failing$/;
/** A failure's first title line: `  1) suite` (more titles follow) or `  1) test:`. */
const HEADER = /^ {2}(\d+)\) (.+)$/;
/** A stack frame naming a file: `at name (file:///dir/test.mjs:5:10)` or `at /dir/test.js:5:10`. */
const FRAME = /^\s*at (?:.*? \()?(?:file:\/\/)?([^\s()]+?):\d+:\d+\)?$/;
/** Mocha calls a test (and a hook) with its `Context` as `this`, awaited or not: that frame is in the test file. */
const CONTEXT_FRAME = /^\s*at (?:async )?Context\./;
/** Mocha's timeout names the file, which no frame does: `Timeout of 2000ms exceeded. … (/dir/test.mjs)`. */
const TIMEOUT_FILE = /Timeout of \d+ms exceeded\. .*\(([^()]+)\)$/;
/** Mocha's own words for a timeout, which no other runner uses. */
const MOCHA_TIMEOUT = /Timeout of \d+ms exceeded\. For async tests and hooks, ensure "done\(\)" is called/;
/** What npm prints after a failed script (`npm error code 4`, `npm ERR! …`) is no test's output. */
const NPM_LINE = /^npm (?:error|ERR!|warn|WARN)\b/;
/** Mocha's `tap` reporter: `not ok 3 suite test` (node:test's TAP puts ` - ` before the name). */
const TAP_NOT_OK = /^not ok (\d+) (?!- )(.+?)(?:\s+# .*)?$/;
const TAP_END = /^(?:(?:not )?ok \d+ |# |\d+\.\.\d+$)/;

/**
 * The test file mocha shows: it prints none but in the stack, so the frame of the test function
 * (the first frame is often the code under test), else the first frame outside Node and node_modules,
 * else the file a timeout names.
 */
function fileOf(lines: readonly string[]): string | undefined {
  let fallback: string | undefined;
  for (const line of lines) {
    const frame = FRAME.exec(line)?.[1];
    if (frame === undefined || INTERNAL_FRAME.test(line)) continue;
    if (CONTEXT_FRAME.test(line)) return frame;
    fallback ??= frame;
  }
  return fallback ?? lines.map((line) => TIMEOUT_FILE.exec(line)?.[1]).find((file) => file !== undefined);
}

/**
 * The titles of a failure: the header's and, for a test inside suites, one line per level below it,
 * each indented two spaces more (`       test:` under `  4) suite`). Mocha ends the last one with `:`,
 * which a title may end with too (`config:`), so the lines at the next indentation are read and the
 * titles end at the last of them ending with `:`. Returns the titles and the index of the line after them.
 */
function titlesAt(lines: readonly string[], start: number, first: string): [string[], number] {
  const titles = [first];
  let count = first.endsWith(':') ? 1 : 0;
  for (let line = lines[start + 1]; line !== undefined; line = lines[start + titles.length]) {
    const indent = 5 + 2 * titles.length;
    if (line.length <= indent || line.slice(0, indent).trim() !== '' || line[indent] === ' ') break;
    titles.push(line.slice(indent));
    if (line.endsWith(':')) count = titles.length;
  }
  const kept = titles.slice(0, count || titles.length);
  kept.push((kept.pop() as string).replace(/:$/, ''));
  return [kept, start + kept.length];
}

interface SpecFailure {
  readonly titles: string[];
  readonly lines: string[];
  /** A stack frame was read: mocha prints the stack last, so the next blank line ends the failure. */
  framed: boolean;
}

/**
 * Mocha's default `spec` reporter: after `N failing`, N `  N) suite › test:` blocks (numbered from 1,
 * titles on indented lines), each the message, a diff and the stack. Every mocha run in the output
 * (`npm test -ws` runs one per workspace) has its own list, numbered from 1 again.
 */
export function parseMochaSpec(lines: readonly string[]): RawFailure[] {
  const failures: SpecFailure[] = [];
  let expected = 0;
  let listed = 0;
  let current: SpecFailure | undefined;
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string;
    const failing = FAILING.exec(line);
    if (failing) {
      [expected, listed, current] = [Number(failing[1]), 0, undefined];
      continue;
    }
    const header = HEADER.exec(line);
    // Numbered in order: a `  2) …` line inside a message is not the next failure.
    if (header && listed < expected && Number(header[1]) === listed + 1) {
      const [titles, next] = titlesAt(lines, index, header[2] as string);
      current = { titles, lines: [], framed: false };
      failures.push(current);
      listed++;
      index = next - 1;
    } else if (current && (NPM_LINE.test(line) || (current.framed && line.trim() === ''))) {
      current = undefined;
    } else if (current) {
      current.lines.push(line);
      current.framed ||= FRAME.test(line);
    }
  }
  return failures.map((failure) => ({
    name: failure.titles.join(' > '),
    file: fileOf(failure.lines),
    lines: failure.lines,
  }));
}

/**
 * Mocha's TAP (12 and 13) ends `# tests`, `# pass`, `# fail`, then the plan; node:test and tape print
 * the plan before those counts. That, or mocha's timeout message, names mocha when no stack shows
 * its test `Context` (every failure a timeout).
 */
function isMochaTap(lines: readonly string[]): boolean {
  return lines.some(
    (line, index) =>
      CONTEXT_FRAME.test(line) ||
      MOCHA_TIMEOUT.test(line) ||
      (/^# fail \d+$/.test(line) && /^1\.\.\d+$/.test(lines[index + 1] ?? '')),
  );
}

/**
 * Mocha's `tap` reporter: `not ok N title` lines, each followed by the error indented two spaces.
 * It joins suite and test titles with spaces, so the name is that full title (`strings upper cases a word`).
 */
export function parseMochaTap(lines: readonly string[]): RawFailure[] {
  if (!isMochaTap(lines)) return [];
  const failures: RawFailure[] = [];
  let current: RawFailure | undefined;
  for (const line of lines) {
    const failed = TAP_NOT_OK.exec(line);
    if (failed) {
      current = { name: failed[2] as string, file: undefined, lines: [] };
      failures.push(current);
      continue;
    }
    if (TAP_END.test(line) || NPM_LINE.test(line)) current = undefined;
    else current?.lines.push(line);
  }
  return failures.map((failure) => ({ ...failure, file: fileOf(failure.lines) }));
}

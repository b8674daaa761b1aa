import type { RawFailure } from './failing-test.js';

const FAIL = /^\s*FAIL\s+(.+?)(?: > (.+?))?(?:\s+\[.*\])?\s*$/;
const SEPARATOR = /^⎯{3,}/;
/** Vitest's failure blocks follow this banner; jest prints ` FAIL  file` too, but never the banner. */
const BANNER = /⎯ Failed (?:Tests|Suites) \d+ ⎯/;

/** Vitest's default reporter: a ` FAIL  file > suite > test` block per failure, ended by a `⎯⎯⎯` rule. */
export function parseVitest(lines: readonly string[]): RawFailure[] {
  const failures: RawFailure[] = [];
  let current: RawFailure | undefined;
  let inFailures = false;
  for (const line of lines) {
    if (BANNER.test(line)) {
      inFailures = true;
      current = undefined;
      continue;
    }
    if (!inFailures) continue;
    const header = FAIL.exec(line);
    if (header) {
      const file = header[1] as string;
      current = { name: header[2] ?? file, file, lines: [] };
      failures.push(current);
      continue;
    }
    if (!current) continue;
    if (SEPARATOR.test(line.trim()) || /^\s*Test Files\s/.test(line)) {
      current = undefined;
      continue;
    }
    current.lines.push(line);
  }
  return failures;
}

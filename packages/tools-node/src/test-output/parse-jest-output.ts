import type { RawFailure } from './failing-test.js';

const FILE = /^\s*FAIL\s+(\S+)/;
const BULLET = /^ {2}● (.+)$/;
const END = /^(?:Test Suites:|Tests:|Snapshots:|Time:|\s*(?:PASS|FAIL)\s)/;

/** Jest's default reporter: `FAIL file`, then one `  ● suite › test` block per failing test. */
export function parseJest(lines: readonly string[]): RawFailure[] {
  const failures: RawFailure[] = [];
  let file: string | undefined;
  let current: RawFailure | undefined;
  for (const line of lines) {
    const fileHeader = FILE.exec(line);
    if (fileHeader) {
      file = fileHeader[1];
      current = undefined;
      continue;
    }
    const bullet = BULLET.exec(line);
    if (bullet && file !== undefined) {
      current = { name: (bullet[1] as string).split(' › ').join(' > '), file, lines: [] };
      failures.push(current);
      continue;
    }
    if (END.test(line)) {
      current = undefined;
      continue;
    }
    current?.lines.push(line);
  }
  return failures;
}

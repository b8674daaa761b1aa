import { stripVTControlCharacters } from 'node:util';
import { cleanLines, type FailingTest, type RawFailure, type TestRunner } from './failing-test.js';
import { parseJest } from './parse-jest-output.js';
import { parseMochaSpec, parseMochaTap } from './parse-mocha-output.js';
import { parseNodeSpec, parseNodeTap } from './parse-node-test-output.js';
import { parsePytest } from './parse-pytest-output.js';
import { parseVitest } from './parse-vitest-output.js';

export interface ExtractFailingTestsOptions {
  /** Characters of output kept per test; longer output ends with a marker. Default 2000. */
  readonly maxOutputChars?: number;
  /** Failing tests listed at most. Default 50. */
  readonly maxTests?: number;
}

const PARSERS: readonly [TestRunner, (lines: readonly string[]) => RawFailure[]][] = [
  ['node-test', (lines) => [...parseNodeTap(lines), ...parseNodeSpec(lines)]],
  ['vitest', parseVitest],
  ['jest', parseJest],
  ['mocha', (lines) => [...parseMochaSpec(lines), ...parseMochaTap(lines)]],
  ['pytest', parsePytest],
];

function trim(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n… (${text.length - maxChars} more characters)`;
}

/**
 * The failing tests in a test command's output (stdout and stderr together is best): node:test
 * (TAP and spec reporters), vitest, jest, mocha (spec and TAP reporters) and pytest. Colours are stripped; output the runners share
 * with nothing else is needed, so an unknown runner or a passing run gives `[]`. Pure: no I/O.
 */
export function extractFailingTests(output: string, options: ExtractFailingTestsOptions = {}): FailingTest[] {
  const maxOutputChars = options.maxOutputChars ?? 2000;
  const maxTests = options.maxTests ?? 50;
  const lines = stripVTControlCharacters(output).replace(/\r\n?/g, '\n').split('\n');
  const seen = new Set<string>();
  const tests: FailingTest[] = [];
  for (const [runner, parse] of PARSERS) {
    for (const failure of parse(lines)) {
      const key = `${runner}\u0000${failure.file ?? ''}\u0000${failure.name}`;
      if (seen.has(key) || tests.length >= maxTests) continue;
      seen.add(key);
      tests.push({
        runner,
        name: failure.name,
        ...(failure.file === undefined ? {} : { file: failure.file }),
        output: trim(cleanLines(failure.lines).join('\n'), maxOutputChars),
      });
    }
  }
  return tests;
}

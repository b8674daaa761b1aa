import type { RawFailure } from './failing-test.js';

const SUBTEST = /^(\s*)# Subtest: (.*)$/;
const NOT_OK = /^(\s*)not ok \d+ - (.*?)(?:\s+# .*)?$/;
const LOCATION = /^\s*location: '(.*?)(?::\d+){0,2}'$/;

/**
 * node:test's TAP reporter (the default when output is not a terminal): `not ok` lines with a YAML
 * block. Suites that failed only because a test inside failed (`subtestsFailed`) are left out.
 */
export function parseNodeTap(lines: readonly string[]): RawFailure[] {
  const failures: RawFailure[] = [];
  const path: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string;
    const subtest = SUBTEST.exec(line);
    if (subtest) {
      const depth = Math.floor((subtest[1] as string).length / 4);
      path.length = depth;
      path[depth] = subtest[2] as string;
      continue;
    }
    const failed = NOT_OK.exec(line);
    if (!failed) continue;
    const indent = (failed[1] as string).length;
    const depth = Math.floor(indent / 4);
    const block: string[] = [];
    if (lines[index + 1]?.trim() === '---') {
      for (index += 2; index < lines.length && lines[index]?.trim() !== '...'; index++)
        block.push(lines[index] as string);
    }
    if (block.some((entry) => entry.includes("failureType: 'subtestsFailed'"))) continue;
    const location = block.map((entry) => LOCATION.exec(entry)?.[1]).find((value) => value !== undefined);
    const names = [...path.slice(0, depth), failed[2] as string];
    failures.push({
      name: names.join(' > '),
      file: location,
      lines: block.filter((entry) => !/^\s*(duration_ms|type|failureType|location):/.test(entry)),
    });
  }
  return failures;
}

const SPEC_SUMMARY = /^✖ failing tests:$/;
const SPEC_AT = /^test at (.+?):\d+:\d+$/;
const SPEC_FAILED = /^✖ (.*?) \([\d.]+m?s\)$/;

/**
 * node:test's spec reporter (the default on a terminal): the `✖ failing tests:` summary lists each
 * failure once as `test at file:line:col`, `✖ name (duration)` and the indented error.
 */
export function parseNodeSpec(lines: readonly string[]): RawFailure[] {
  const start = lines.findIndex((line) => SPEC_SUMMARY.test(line));
  if (start < 0) return [];
  const failures: RawFailure[] = [];
  let current: RawFailure | undefined;
  let file: string | undefined;
  for (const line of lines.slice(start + 1)) {
    const at = SPEC_AT.exec(line);
    if (at) {
      file = at[1];
      continue;
    }
    const failed = SPEC_FAILED.exec(line);
    if (failed) {
      current = { name: failed[1] as string, file, lines: [] };
      failures.push(current);
      file = undefined;
      continue;
    }
    current?.lines.push(line);
  }
  return failures;
}

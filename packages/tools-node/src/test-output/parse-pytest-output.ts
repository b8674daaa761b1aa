import type { RawFailure } from './failing-test.js';

const SUMMARY = /^(FAILED|ERROR) (\S+?)(?:::(\S+))?(?: - .*)?$/;
const SECTION = /^_{3,} (.+?) _{3,}$/;
const RULE = /^={3,} .* ={3,}$/;

/**
 * pytest: the `short test summary info` lines (`FAILED file::Class::test - message`) name the
 * failures; the `____ Class.test ____` sections of the FAILURES block give each one's output.
 */
export function parsePytest(lines: readonly string[]): RawFailure[] {
  const sections = new Map<string, string[]>();
  let section: string[] | undefined;
  for (const line of lines) {
    const header = SECTION.exec(line);
    if (header) {
      section = [];
      sections.set(header[1] as string, section);
      continue;
    }
    if (RULE.test(line)) {
      section = undefined;
      continue;
    }
    section?.push(line);
  }
  const failures: RawFailure[] = [];
  for (const line of lines) {
    const entry = SUMMARY.exec(line);
    if (!entry) continue;
    const file = entry[2] as string;
    const test = entry[3];
    const name = test === undefined ? file : test.split('::').join(' > ');
    const output = sections.get(test === undefined ? file : test.split('::').join('.')) ?? [line];
    failures.push({ name, file, lines: output });
  }
  return failures;
}

/** The runners whose output `extractFailingTests` understands. */
export type TestRunner = 'node-test' | 'vitest' | 'jest' | 'mocha' | 'pytest';

/** One failing test as a runner reported it. */
export interface FailingTest {
  readonly runner: TestRunner;
  /** Suite names and the test name joined with ` > `, e.g. `strings > upper cases a word`. */
  readonly name: string;
  /** The test file as the runner printed it (relative or absolute), when it did. */
  readonly file?: string;
  /** The failure message, diff and useful stack lines; trimmed (runner-internal frames dropped). */
  readonly output: string;
}

/** A failing test before trimming. */
export interface RawFailure {
  readonly name: string;
  readonly file: string | undefined;
  readonly lines: string[];
}

/** Frames inside Node or the runner itself say nothing about the bug. */
export const INTERNAL_FRAME = /^\s*(?:at\s+)?(?:.*\()?(?:node:|.*\/node_modules\/)/;

/** Drops internal stack frames, common indentation and blank edges. */
export function cleanLines(lines: readonly string[]): string[] {
  const kept = lines.filter((line) => !INTERNAL_FRAME.test(line));
  while (kept.length > 0 && kept[0]?.trim() === '') kept.shift();
  while (kept.length > 0 && kept.at(-1)?.trim() === '') kept.pop();
  const indent = Math.min(
    ...kept.filter((line) => line.trim() !== '').map((line) => line.length - line.trimStart().length),
  );
  return Number.isFinite(indent) && indent > 0 ? kept.map((line) => line.slice(indent)) : kept;
}

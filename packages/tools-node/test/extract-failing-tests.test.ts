import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { extractFailingTests } from '../src/index.js';

// Captured by running the same tiny failing suite (add() subtracts, a nested upper-case test, a
// thrown Error) under each runner: node --test (TAP and spec reporters), vitest 4, jest 29, pytest 9.
const fixture = (name: string) => readFileSync(new URL(`./fixtures/test-output/${name}`, import.meta.url), 'utf8');

const names = (output: string) => extractFailingTests(output).map((test) => test.name);

describe('extractFailingTests on real runner output', () => {
  it('reads node:test TAP: nested names, file, the assertion diff, no internal frames', () => {
    const tests = extractFailingTests(fixture('node-test-tap.txt'));
    expect(tests.map((test) => test.name)).toEqual([
      'adds two numbers',
      'strings > upper cases a word',
      'throws a plain error',
    ]);
    expect(tests.every((test) => test.runner === 'node-test')).toBe(true);
    expect(tests[0]?.file).toBe('/tmp/planner-fixtures/node/math.test.mjs');
    expect(tests[0]?.output).toContain('-1 !== 5');
    expect(tests[0]?.output).toContain('math.test.mjs:7:10');
    expect(tests[0]?.output).not.toContain('node:internal');
    expect(tests[2]?.output).toContain('boom: something exploded');
  });

  it('reads node:test output of several files', () => {
    const tests = extractFailingTests(fixture('node-test-two-files.txt'));
    expect(tests.map((test) => `${path.basename(test.file ?? '')}: ${test.name}`)).toEqual([
      'math.test.mjs: adds two numbers',
      'math.test.mjs: strings > upper cases a word',
      'math.test.mjs: throws a plain error',
      'other.test.mjs: other fails',
    ]);
  });

  it('reads the node:test spec summary once per failure', () => {
    const tests = extractFailingTests(fixture('node-test-spec.txt'));
    expect(tests.map((test) => test.name)).toEqual(['adds two numbers', 'upper cases a word', 'throws a plain error']);
    expect(tests[1]?.file).toBe('math.test.mjs');
    expect(tests[1]?.output).toContain("'HI' !== 'Hi'");
  });

  it.each(['vitest-plain.txt', 'vitest-colour.txt'])('reads vitest (%s)', (file) => {
    const tests = extractFailingTests(fixture(file));
    expect(tests.map((test) => test.name)).toEqual([
      'adds two numbers',
      'strings > upper cases a word',
      'throws a plain error',
    ]);
    expect(tests.every((test) => test.runner === 'vitest' && test.file === 'math.test.ts')).toBe(true);
    expect(tests[1]?.output).toContain("expected { word: 'HI' } to deeply equal { word: 'Hi' }");
    expect(tests[1]?.output).not.toMatch(/\u001b\[/);
  });

  it('reads pytest: summary ids with the failure sections', () => {
    const tests = extractFailingTests(fixture('pytest.txt'));
    expect(tests.map((test) => test.name)).toEqual([
      'test_adds_two_numbers',
      'TestStrings > test_upper_cases_a_word',
      'test_throws_a_plain_error',
    ]);
    expect(tests[1]?.file).toBe('test_math.py');
    expect(tests[1]?.output).toContain("AssertionError: assert 'HI' == 'Hi'");
    expect(tests[2]?.output).toContain('RuntimeError: boom: something exploded');
  });

  it('reads jest: suite › test blocks under their FAIL file', () => {
    const tests = extractFailingTests(fixture('jest.txt'));
    expect(tests.map((test) => test.name)).toEqual([
      'adds two numbers',
      'strings > upper cases a word',
      'throws a plain error',
    ]);
    expect(tests.every((test) => test.runner === 'jest' && test.file === './math.test.js')).toBe(true);
    expect(tests[0]?.output).toContain('Received: -1');
    expect(tests[2]?.output).toContain('at Object.<anonymous> (math.test.js:21:9)');
    expect(tests[2]?.output).not.toContain('Test Suites:');
  });

  it('finds nothing in passing or unknown output, and trims long output with a marker', () => {
    expect(names('ok 1 - fine\n# pass 1\n# fail 0\n')).toEqual([]);
    expect(names('error TS2322: Type string is not assignable')).toEqual([]);
    const [first] = extractFailingTests(fixture('node-test-tap.txt'), { maxOutputChars: 20 });
    expect(first?.output).toMatch(/^.{20}\n… \(\d+ more characters\)$/s);
    expect(extractFailingTests(fixture('node-test-tap.txt'), { maxTests: 1 })).toHaveLength(1);
  });
});

describe('extractFailingTests on a live node --test run', () => {
  it('names the failing tests of a suite run right now', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'failing-tests-'));
    try {
      await writeFile(
        path.join(dir, 'live.test.mjs'),
        [
          "import { test } from 'node:test';",
          "import assert from 'node:assert/strict';",
          "test('passes', () => assert.equal(1, 1));",
          "test('compares totals', () => assert.equal(40 + 1, 42));",
        ].join('\n'),
      );
      const result = await promisify(execFile)(process.execPath, ['--test', 'live.test.mjs'], { cwd: dir }).then(
        () => undefined,
        (error: { stdout: string; stderr: string; code: number }) => error,
      );
      expect(result?.code).toBe(1);
      const tests = extractFailingTests(`${result?.stdout}\n${result?.stderr}`);
      expect(tests.map((test) => test.name)).toEqual(['compares totals']);
      expect(tests[0]?.output).toContain('41 !== 42');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

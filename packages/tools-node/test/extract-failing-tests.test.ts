import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { extractFailingTests } from '../src/index.js';

// Captured by running the same tiny failing suite (add() subtracts, a nested upper-case test, a
// thrown Error) under each runner: node --test (TAP and spec reporters), vitest 4, jest 29, pytest 9,
// mocha 11.8 (spec reporter on two files, spec with --color --full-trace on one, tap on two). The
// mocha-*-workspaces/timeout/async fixtures come from a second project: `npm test -ws` over two
// workspaces, then mocha's tap (12 and 13) reporter on one workspace's timeout and awaited failure.
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

  it('reads mocha spec: numbered failures after the summary, nested titles, the file from the stack', () => {
    const tests = extractFailingTests(fixture('mocha-spec.txt'));
    expect(tests.map((test) => `${path.basename(test.file ?? '')}: ${test.name}`)).toEqual([
      'math.test.mjs: adds two numbers',
      'math.test.mjs: throws a plain error',
      'other.test.mjs: other fails',
      'math.test.mjs: strings > upper cases a word',
    ]);
    expect(tests.every((test) => test.runner === 'mocha')).toBe(true);
    expect(tests[0]?.file).toBe('/tmp/mocha-capture/test/math.test.mjs');
    expect(tests[0]?.output).toContain('-1 !== 5');
    expect(tests[0]?.output).toContain('math.test.mjs:5:10');
    expect(tests[1]?.output).toContain('Error: boom: something exploded');
    expect(tests[3]?.output).toContain("'HI' !== 'Hi'");
    // The progress list above the summary names the failures too, without their output: read once.
    expect(tests[3]?.output).not.toContain('joins words');
    for (const test of tests) expect(test.output).not.toContain('node:internal');
  });

  it('reads mocha spec in colour with full traces, leaving out the frames of mocha itself', () => {
    const tests = extractFailingTests(fixture('mocha-spec-colour-full-trace.txt'));
    expect(tests.map((test) => test.name)).toEqual([
      'adds two numbers',
      'throws a plain error',
      'strings > upper cases a word',
    ]);
    expect(tests.every((test) => test.file === '/tmp/mocha-capture/test/math.test.mjs')).toBe(true);
    expect(fixture('mocha-spec-colour-full-trace.txt')).toContain('node_modules/mocha/lib/runner.js');
    for (const test of tests) {
      expect(test.output).not.toMatch(/node_modules|\u001b\[/);
      expect(test.output).toContain('at Context.<anonymous> (file:///tmp/mocha-capture/test/math.test.mjs');
    }
    expect(tests[2]?.output).toContain("'HI' !== 'Hi'");
  });

  it('reads mocha tap: the full title as mocha joins it, the file from the stack', () => {
    const tests = extractFailingTests(fixture('mocha-tap.txt'));
    expect(tests.map((test) => `${path.basename(test.file ?? '')}: ${test.name}`)).toEqual([
      'math.test.mjs: adds two numbers',
      'math.test.mjs: throws a plain error',
      'other.test.mjs: other fails',
      'math.test.mjs: strings upper cases a word',
    ]);
    expect(tests.every((test) => test.runner === 'mocha')).toBe(true);
    expect(tests[2]?.output).toContain('+   a: 1');
    expect(tests[3]?.output).not.toContain('# tests');
  });

  // Captured from `npm test -ws` in a two-workspace project: mocha runs once per workspace, each run
  // numbering its failures from 1; npm reports each failed script after the run.
  it('reads every mocha run of `npm test -ws`, each numbered from 1, without npm lines', () => {
    const tests = extractFailingTests(fixture('mocha-spec-workspaces.txt'));
    expect(tests.map((test) => `${path.basename(test.file ?? '')}: ${test.name}`)).toEqual([
      'math.test.mjs: adds two numbers',
      'math.test.mjs: throws a plain error',
      'other.test.mjs: other fails',
      'math.test.mjs: strings > upper cases a word',
      'cart.test.mjs: cart > applies a discount',
      'cart.test.mjs: cart > totals the items',
      'cart.test.mjs: config: > reads defaults:',
      'cart.test.mjs: config: > files: > parses a file',
      'db.test.mjs: db > saves a row',
      'db.test.mjs: db > is slow',
    ]);
    expect(tests.every((test) => test.runner === 'mocha')).toBe(true);
    for (const test of tests) expect(test.output).not.toMatch(/npm (?:error|warn)|> (?:mocha|beta@)|passing/);
    expect(tests[3]?.output).toContain("'HI' !== 'Hi'");
    expect(tests[4]?.output).toContain("TypeError: Cannot read properties of undefined (reading 'price')");
    expect(tests[4]?.output).toContain('at applyDiscount (file:///tmp/mocha-ws/packages/beta/src/cart.js:2:24)');
    expect(tests[6]?.output).toBe(
      'Error: no defaults\n at Context.<anonymous> (file:///tmp/mocha-ws/packages/beta/test/cart.test.mjs:21:11)',
    );
    expect(tests[7]?.output).toContain('-  "port": 80');
    expect(tests[8]?.output).toContain('at async Context.<anonymous>');
    expect(tests[9]?.output).toContain('Timeout of 50ms exceeded.');
  });

  it('names the test file, not the code under test a stack starts in, nor a helper the test awaited', () => {
    const tests = extractFailingTests(fixture('mocha-spec-workspaces.txt'));
    const fileOf = (name: string) => tests.find((test) => test.name === name)?.file;
    expect(fileOf('cart > applies a discount')).toBe('/tmp/mocha-ws/packages/beta/test/cart.test.mjs');
    expect(fileOf('db > saves a row')).toBe('/tmp/mocha-ws/packages/beta/test/db.test.mjs');
    // A timeout has only Node's frames; mocha names the file in its message.
    expect(fileOf('db > is slow')).toBe('/tmp/mocha-ws/packages/beta/test/db.test.mjs');
  });

  it.each(['mocha-tap-timeout.txt', 'mocha-tap13-timeout.txt'])(
    'reads mocha tap whose only failure is a timeout (%s)',
    (file) => {
      const tests = extractFailingTests(fixture(file));
      expect(tests.map((test) => [test.runner, test.name, test.file])).toEqual([
        ['mocha', 'db is slow', '/tmp/mocha-ws/packages/beta/test/db.test.mjs'],
      ]);
      expect(tests[0]?.output).toContain('Timeout of 50ms exceeded.');
      expect(tests[0]?.output).not.toContain('node:internal');
      // Cut before its closing counts: mocha's timeout message still names it.
      const cut = fixture(file).slice(0, fixture(file).indexOf('# tests'));
      expect(extractFailingTests(cut).map((test) => test.name)).toEqual(['db is slow']);
    },
  );

  it('reads mocha tap whose failure was thrown after an await, with or without its closing counts', () => {
    const output = fixture('mocha-tap-async.txt');
    // A run killed before its end prints no counts: the awaited `Context` frame still names mocha.
    const cut = output.slice(0, output.indexOf('# tests'));
    for (const text of [output, cut]) {
      const tests = extractFailingTests(text);
      expect(tests.map((test) => [test.runner, test.name, test.file])).toEqual([
        ['mocha', 'db saves a row', '/tmp/mocha-ws/packages/beta/test/db.test.mjs'],
      ]);
      expect(tests[0]?.output).toContain('1 !== 2');
    }
  });

  it("leaves TAP that puts its plan before the counts (tape's) to other readers", () => {
    const tape = [
      'TAP version 13',
      '# db is slow',
      'not ok 1 test exited without ending: db is slow',
      '  ---',
      '    operator: fail',
      '  ...',
      '',
      '1..1',
      '# tests 1',
      '# pass  0',
      '# fail  1',
    ].join('\n');
    expect(extractFailingTests(tape)).toEqual([]);
    expect(extractFailingTests(tape.replace('# fail  1', '# fail 1\n1..1')).map((test) => test.name)).toEqual([
      'test exited without ending: db is slow',
    ]);
  });

  it('reads the output of each runner as that runner only', () => {
    const runners = (file: string) => [...new Set(extractFailingTests(fixture(file)).map((test) => test.runner))];
    expect(runners('mocha-spec.txt')).toEqual(['mocha']);
    for (const file of [
      'mocha-spec-workspaces.txt',
      'mocha-tap.txt',
      'mocha-tap-timeout.txt',
      'mocha-tap13-timeout.txt',
    ]) {
      expect(runners(file)).toEqual(['mocha']);
    }
    for (const file of ['node-test-tap.txt', 'node-test-spec.txt', 'node-test-two-files.txt']) {
      expect(runners(file)).toEqual(['node-test']);
    }
    expect(runners('vitest-plain.txt')).toEqual(['vitest']);
    expect(runners('jest.txt')).toEqual(['jest']);
    expect(runners('pytest.txt')).toEqual(['pytest']);
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

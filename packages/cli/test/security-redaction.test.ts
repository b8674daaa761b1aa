import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { secretForms } from '@stepwise/core/engine';
import { describe, expect, it } from 'vitest';
import { FIXTURES, parseJsonLines, useCliWorkspace } from './helpers.js';

/**
 * A secret handed back in every shape (class instance, URL, Buffer, object key, step id, plan id,
 * argument key) and encoding (upper/lower case, hex, base64 at several alignments, base64url,
 * percent-encoding — also of every byte —, split over lines, MIME- and PEM-wrapped base64), by a
 * tool, by a command's stdout and in a thrown error, or quoted by an invalid plan's problems, must
 * not reach the JSONL, the SQLite database, `stepwise show`, the HTML report or printed errors.
 */
const SECRET = 'Zq7-hunter2-Secret-42x';
const ENV = { STEPWISE_SECURITY_SECRET: SECRET };

const cli = useCliWorkspace({
  commands: { allow: ['node'] },
  secretEnv: ['STEPWISE_SECURITY_SECRET'],
  approvals: { exec: 'auto' },
  plugins: [{ module: path.join(FIXTURES, 'leaky-plugin.mjs') }],
});

/**
 * The text as written, without line breaks (real or JSON-escaped), and with percent-encoded bytes
 * decoded: a secret the redactor let through in a disguised form shows plainly in one of them.
 */
function views(text: string): string[] {
  const joined = text.replace(/\r|\n|\\r|\\n/g, '');
  const decoded = joined.replace(/%[0-9a-f]{2}/gi, (encoded) =>
    String.fromCharCode(Number.parseInt(encoded.slice(1), 16)),
  );
  return [text, joined, decoded].map((view) => view.toLowerCase());
}

const FORMS = secretForms(SECRET).map((form) => form.toLowerCase());

/** The forms of the secret found in `text` (case-insensitive, so upper and lower case count). */
function leaks(text: string): string[] {
  const seen = views(text);
  return FORMS.filter((form) => seen.some((view) => view.includes(form)));
}

/** Every output checked, by name, so a failure names where the secret leaked. */
const outputs = new Map<string, string>();
function check(name: string, text: string): void {
  outputs.set(name, text);
  expect({ name, leaks: leaks(text) }).toEqual({ name, leaks: [] });
}

const PRINT = `const secret = ${JSON.stringify(SECRET)};
const bytes = Buffer.from(secret);
console.log('plain', secret);
console.log('upper', secret.toUpperCase());
console.log('hex', bytes.toString('hex'));
for (const prefix of ['', 'a', 'ab']) console.log('b64', Buffer.from(prefix + secret + '!').toString('base64'));
console.log('url', encodeURIComponent('&' + secret));
console.log('every byte', [...bytes].map((byte) => '%' + byte.toString(16).toUpperCase()).join(''));
console.log('split', secret.slice(0, 8) + '\\n' + secret.slice(8));
console.log('crlf', secret.slice(0, 3) + '\\r\\n' + secret.slice(3));
const mime = Buffer.from('Content-Type: text/plain\\r\\n\\r\\n' + secret + ' and the rest of the message').toString('base64');
console.log(mime.replace(/(.{76})/g, '$1\\r\\n'));
`;

describe('redaction across every output of the command line', () => {
  it('leaves no form of the secret in JSONL, the database, show, the report or errors', async () => {
    await cli.write('print.js', PRINT);
    await cli.write('leaks.json', {
      id: `leaks-${SECRET}`,
      goal: `deploy with ${SECRET}`,
      steps: [
        { id: 'forms', tool: 'leak_forms', args: { [SECRET]: 1, note: `arg ${SECRET}` } },
        { id: 'encoded', tool: 'leak_encoded', args: {} },
        { id: `deploy-${SECRET}`, tool: 'leak_forms', args: {} },
        { id: 'print', tool: 'run_command', args: { command: ['node', 'print.js'] } },
        { id: 'fail', tool: 'leak_error', args: {}, critical: false },
      ],
    });
    // The secret really is in play: the plan and the script hold it, plainly and disguised.
    expect(leaks(PRINT).length).toBeGreaterThan(0);

    const json = await cli.stepwise(['run', 'leaks.json', '--engine', 'dag', '--json'], { env: ENV });
    expect(json.stdout, json.stderr).not.toBe('');
    const events = parseJsonLines(json.stdout);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'partial' });
    expect(events[0]).toMatchObject({ type: 'run-start', planId: 'leaks-[REDACTED]' });
    const runId = events[0]?.runId as string;
    // Each tool did run and hand back its payload (redacted): the test is not vacuous.
    const results = events.filter((event) => event.type === 'tool-result');
    expect(results).toHaveLength(5);
    expect(JSON.stringify(results)).toContain('[REDACTED]');
    const encoded = results.find((event) => event.stepId === 'encoded') as { output: Record<string, string> };
    expect(Object.keys(encoded.output)).toHaveLength(10);
    for (const [field, value] of Object.entries(encoded.output))
      expect({ field, value }).toMatchObject({ value: /\[REDACTED\]/ });
    check('run --json', json.stdout + json.stderr);

    const human = await cli.stepwise(['run', 'leaks.json', '--engine', 'dag'], { env: ENV });
    expect(human.stdout + human.stderr).toMatch(/could not log in/);
    check('run', human.stdout + human.stderr);

    const execution = results[0]?.executionId as string;
    for (const args of [
      ['show', runId],
      ['show', runId, '--json'],
      ['show', execution, '--json'],
      ['runs'],
      ['runs', '--json'],
    ]) {
      const shown = await cli.stepwise(args, { env: ENV });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout.length).toBeGreaterThan(100);
      check(args.join(' '), shown.stdout + shown.stderr);
    }

    const report = await cli.stepwise(['report', runId, '--out', 'report.html'], { env: ENV });
    expect(report.code, report.stderr).toBe(0);
    const html = await readFile(path.join(cli.directory, 'report.html'), 'utf8');
    expect(html).toContain('leak_forms');
    check('report.html', html);

    const databaseDirectory = path.join(cli.directory, '.stepwise');
    const files = (await readdir(databaseDirectory)).filter((name) => name.startsWith('stepwise.db'));
    expect(files).toContain('stepwise.db');
    for (const file of files) check(file, (await readFile(path.join(databaseDirectory, file))).toString('latin1'));
  }, 180_000);

  const invalidPlans: [string, Record<string, unknown>][] = [
    ['an unknown tool (E201)', { id: 'p', steps: [{ id: 'a', tool: `deploy_${SECRET}`, args: {} }] }],
    [
      'a reference to an unknown step',
      { id: 'p', steps: [{ id: 'a', tool: 'leak_forms', args: { value: `$${SECRET}` } }] },
    ],
    ['an unknown field', { id: 'p', steps: [{ id: 'a', tool: 'leak_forms', [SECRET]: true }] }],
    [
      'a dependency on an unknown step',
      { id: 'p', steps: [{ id: 'a', tool: 'leak_forms', dependsOn: [`x-${SECRET}`] }] },
    ],
    [
      'a duplicate step id',
      {
        id: `p-${SECRET}`,
        steps: [
          { id: `d-${SECRET}`, tool: 'leak_forms' },
          { id: `d-${SECRET}`, tool: 'leak_forms' },
        ],
      },
    ],
  ];
  it.each(invalidPlans)(
    'prints no secret for an invalid plan: %s',
    async (name, plan) => {
      const file = `invalid-${name.replace(/\W+/g, '-')}.json`;
      await cli.write(file, plan);
      for (const engine of ['dag', 'sequential']) {
        for (const format of [[], ['--json']]) {
          const outcome = await cli.stepwise(['run', file, '--engine', engine, ...format], { env: ENV });
          expect(outcome.code, outcome.stdout + outcome.stderr).toBe(2);
          expect(outcome.stdout + outcome.stderr).toMatch(/E00[12]|E201/);
          check(`${name}: run --engine ${engine} ${format.join(' ')}`, outcome.stdout + outcome.stderr);
        }
      }
      for (const command of [
        ['validate', file],
        ['validate', file, '--json'],
        ['validate', file, '--no-tools'],
      ]) {
        const outcome = await cli.stepwise(command, { env: ENV });
        // --no-tools checks the structure only: an unknown tool passes it.
        if (!command.includes('--no-tools')) expect(outcome.code, outcome.stdout + outcome.stderr).toBe(2);
        check(`${name}: ${command.join(' ')}`, outcome.stdout + outcome.stderr);
      }
      const approved = await cli.stepwise(['approve', file, '--by', 'alice'], { env: ENV });
      check(`${name}: approve`, approved.stdout + approved.stderr);
    },
    120_000,
  );

  it('prints no secret when it approves a plan whose id holds one', async () => {
    await cli.write('secret-id.json', { id: `plan-${SECRET}`, steps: [{ id: 'a', tool: 'leak_forms', args: {} }] });
    const outcome = await cli.stepwise(['approve', 'secret-id.json', '--by', 'alice'], { env: ENV });
    expect(outcome.code, outcome.stdout + outcome.stderr).toBe(0);
    expect(outcome.stdout).toContain('approved plan plan-[REDACTED]');
    check('approve a plan with a secret id', outcome.stdout + outcome.stderr);
  }, 60_000);

  it.each([5_000, 100_000])(
    'refuses args nested %i levels deep with E202, not a stack overflow',
    async (depth) => {
      // Written as text: JSON.stringify itself overflows the stack on such a value.
      const value = `${'{"a":'.repeat(depth)}${JSON.stringify(SECRET)}${'}'.repeat(depth)}`;
      const plan = `{"id":"deep","steps":[{"id":"a","tool":"leak_forms","args":{"value":${value}}}]}`;
      await cli.write(`deep-${depth}.json`, plan);
      const outcome = await cli.stepwise(['run', `deep-${depth}.json`, '--engine', 'dag'], { env: ENV });
      expect(outcome.code, outcome.stderr).toBe(2);
      expect(outcome.stderr).toMatch(/E202 \/steps\/0\/args\/value\/a\/a/);
      expect(outcome.stderr).toMatch(/more than 256 levels/);
      expect(outcome.stderr).not.toMatch(/RangeError|Maximum call stack/);
      check(`deep ${depth}`, outcome.stdout + outcome.stderr);
    },
    60_000,
  );

  it('checked every output above against every form of the secret', () => {
    // 1 run --json, 1 run, 5 show/runs, the report, the database files, 5 × (4 runs, 3 validates,
    // 1 approve) invalid plans, 1 approved plan, 2 deep plans.
    expect(outputs.size).toBeGreaterThanOrEqual(1 + 1 + 5 + 1 + 1 + 40 + 1 + 2);
    console.info(`redaction corpus: ${outputs.size} outputs × ${FORMS.length} forms × 3 views, 0 leaks`);
  });
});

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { secretForms } from '@stepwise/core';
import { describe, expect, it } from 'vitest';
import { FIXTURES, parseJsonLines, useCliWorkspace } from './helpers.js';

/**
 * A secret handed back in every shape (class instance, URL, Buffer, object key, step id,
 * argument key) and encoding (upper/lower case, hex, base64 at several alignments, base64url,
 * percent-encoding), by a tool, by a command's stdout and in a thrown error, must not reach
 * the JSONL, the SQLite database, `stepwise show`, the HTML report or printed errors.
 */
const SECRET = 'Zq7-hunter2-Secret-42x';
const ENV = { STEPWISE_SECURITY_SECRET: SECRET };

const cli = useCliWorkspace({
  commands: { allow: ['node'] },
  secretEnv: ['STEPWISE_SECURITY_SECRET'],
  approvals: { exec: 'auto' },
  plugins: [{ module: path.join(FIXTURES, 'leaky-plugin.mjs') }],
});

/** The forms of the secret found in `text` (case-insensitive, so upper and lower case count). */
function leaks(text: string): string[] {
  const lower = text.toLowerCase();
  return secretForms(SECRET).filter((form) => lower.includes(form.toLowerCase()));
}

const PRINT = `const secret = ${JSON.stringify(SECRET)};
console.log('plain', secret);
console.log('upper', secret.toUpperCase());
console.log('hex', Buffer.from(secret).toString('hex'));
for (const prefix of ['', 'a', 'ab']) console.log('b64', Buffer.from(prefix + secret + '!').toString('base64'));
console.log('url', encodeURIComponent('&' + secret));
`;

describe('redaction across every output of the command line', () => {
  it('leaves no form of the secret in JSONL, the database, show, the report or errors', async () => {
    await cli.write('print.js', PRINT);
    await cli.write('leaks.json', {
      id: 'leaks',
      steps: [
        { id: 'forms', tool: 'leak_forms', args: { [SECRET]: 1, note: `arg ${SECRET}` } },
        { id: `deploy-${SECRET}`, tool: 'leak_forms', args: {} },
        { id: 'print', tool: 'run_command', args: { command: ['node', 'print.js'] } },
        { id: 'fail', tool: 'leak_error', args: {}, critical: false },
      ],
    });
    // The secret really is in play: the plan and the script hold it.
    expect(leaks(PRINT).length).toBeGreaterThan(0);

    const json = await cli.stepwise(['run', 'leaks.json', '--engine', 'dag', '--json'], { env: ENV });
    expect(json.stdout, json.stderr).not.toBe('');
    const events = parseJsonLines(json.stdout);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'partial' });
    const runId = events[0]?.runId as string;
    // Each tool did run and hand back its payload (redacted): the test is not vacuous.
    const results = events.filter((event) => event.type === 'tool-result');
    expect(results).toHaveLength(4);
    expect(JSON.stringify(results)).toContain('[REDACTED]');
    expect(leaks(json.stdout + json.stderr)).toEqual([]);

    const human = await cli.stepwise(['run', 'leaks.json', '--engine', 'dag'], { env: ENV });
    expect(human.stdout + human.stderr).toMatch(/could not log in/);
    expect(leaks(human.stdout + human.stderr)).toEqual([]);

    const execution = results[0]?.executionId as string;
    for (const args of [
      ['show', runId],
      ['show', runId, '--json'],
      ['show', execution, '--json'],
    ]) {
      const shown = await cli.stepwise(args, { env: ENV });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout.length).toBeGreaterThan(100);
      expect({ args, leaks: leaks(shown.stdout + shown.stderr) }).toEqual({ args, leaks: [] });
    }

    const report = await cli.stepwise(['report', runId, '--out', 'report.html'], { env: ENV });
    expect(report.code, report.stderr).toBe(0);
    const html = await readFile(path.join(cli.directory, 'report.html'), 'utf8');
    expect(html).toContain('leak_forms');
    expect(leaks(html)).toEqual([]);

    const databaseDirectory = path.join(cli.directory, '.stepwise');
    const files = (await readdir(databaseDirectory)).filter((name) => name.startsWith('stepwise.db'));
    expect(files).toContain('stepwise.db');
    for (const file of files) {
      const bytes = (await readFile(path.join(databaseDirectory, file))).toString('latin1');
      expect({ file, leaks: leaks(bytes) }).toEqual({ file, leaks: [] });
    }
  }, 120_000);
});

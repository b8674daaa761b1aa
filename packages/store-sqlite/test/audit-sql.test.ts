import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { executeRun, longCommand } from './audit-run.js';
import { temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('audit');

/** The ```sql blocks of the README, in order. */
function readmeQueries(): string[] {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  return [...readme.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) => match[1] as string);
}

describe('the plain-SQL audit queries of the README', () => {
  it('answer their questions on a real run', async () => {
    const path = join(directory, 'audit.db');
    await executeRun(path, 'run_audit');
    const queries = readmeQueries();
    // The fourth, on the code agent's views, runs in solve-views.test.ts.
    expect(queries).toHaveLength(4);
    const [whatRan, failedSteps, commands] = queries as [string, string, string];
    const database = new Database(path, { readonly: true });
    try {
      // What did run X do?
      const calls = database.prepare(whatRan).all({ run_id: 'run_audit' }) as Record<string, unknown>[];
      expect(calls.map((call) => [call.step_id, call.tool, call.status, call.exit_code])).toEqual([
        ['build', 'run_command', 'succeeded', 0],
        ['test', 'run_command', 'failed', 1],
        ['long', 'run_command', 'succeeded', 0],
        ['report', 'note', 'succeeded', null],
      ]);
      expect(JSON.parse(calls[0]?.args as string)).toEqual({ command: ['npm', 'run', 'build'] });
      expect(JSON.parse(calls[2]?.args as string)).toEqual({ command: longCommand });
      expect(calls[1]?.error_code).toBe('E304');
      expect(database.prepare(whatRan).all({ run_id: 'run_nobody' })).toEqual([]);

      // Which steps failed, and why?
      const failures = database.prepare(failedSteps).all() as Record<string, unknown>[];
      expect(failures).toEqual([
        expect.objectContaining({
          run_id: 'run_audit',
          plan_id: 'plan_audit',
          goal: 'ship the release',
          step_id: 'test',
          description: 'run the tests',
          tool: 'run_command',
          attempt: 1,
          error_code: 'E304',
          error_message: 'npm test exited with code 1',
        }),
      ]);

      // Every command ever run, with its exit code.
      const ran = database.prepare(commands).all() as Record<string, unknown>[];
      expect(ran.map((row) => [row.command, row.exit_code, row.status])).toEqual([
        ['npm run build', 0, 'succeeded'],
        ['npm test', 1, 'failed'],
        [longCommand.join(' '), 0, 'succeeded'],
      ]);
      // The long arguments really were stored once, in `blobs`.
      expect(
        database
          .prepare(
            "select count(*) from executions_view where step_id = 'long' and args is null and args_sha256 is not null",
          )
          .pluck()
          .get(),
      ).toBe(1);
    } finally {
      database.close();
    }
  });
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Plan, StepResult } from '@stepwise/core';
import { deriveExecutionId, finishRun, startRun } from '@stepwise/core/engine';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('solve-views');

const plan: Plan = { id: 'plan_fix', goal: 'make the tests pass', steps: [{ id: 'fix', description: 'Fix it.' }] };
// Longer than the blob threshold below: the view must read it back from `blobs`.
const longOutput = `not ok 1 - discounts > half price\n${'  expected 15, got 29.4\n'.repeat(40)}`;

/**
 * An event of the code agent as `@stepwise/code-agent` journals it. The store reads these by their type
 * (its views) without depending on that package, so here they are literals of that shape.
 */
type JournalInput = Parameters<Awaited<ReturnType<typeof startRun>>['emit']>[0];
const codeAgentEvent = (event: { readonly type: string; readonly [field: string]: unknown }) =>
  event as unknown as JournalInput;

/** A code-agent journal as `solve()` writes it: a failed attempt (validated, rolled back), then a good one. */
async function journalSolveRun(path: string, runId: string): Promise<void> {
  const store = createSqliteStore({ path, artifactThresholdBytes: 256 });
  const journal = await startRun({ store, runId, plan, engine: 'solve' });
  const results: StepResult[] = [];
  for (const attempt of [1, 2]) {
    const passed = attempt === 2;
    const executionId = deriveExecutionId(runId, 'fix', attempt);
    await journal.record({ type: 'step-start', stepId: 'fix', tool: undefined, attempt, executionId });
    journal.emit(
      codeAgentEvent({
        type: 'validation-end',
        stepId: 'fix',
        attempt,
        validationRunId: `run_validate_${attempt}`,
        command: ['node', '--test'],
        exitCode: passed ? 0 : 1,
        passed,
        failingTests: passed ? [] : [{ name: 'discounts > half price', output: 'expected 15, got 29.4' }],
        output: passed ? 'ok 1 - discounts > half price\n' : longOutput,
      }),
    );
    if (!passed) {
      journal.emit(
        codeAgentEvent({
          type: 'workspace-rollback',
          stepId: 'fix',
          attempt,
          restored: ['src/cart.js'],
          removed: ['x.tmp'],
        }),
      );
    }
    journal.emit(
      codeAgentEvent({
        type: 'attempt-end',
        stepId: 'fix',
        attempt,
        implementationRunId: `run_implement_${attempt}`,
        status: 'succeeded',
        changes: { created: passed ? [] : ['x.tmp'], modified: ['src/cart.js'], deleted: [] },
        rolledBack: !passed,
      }),
    );
    const result: StepResult = {
      stepId: 'fix',
      tool: undefined,
      status: passed ? 'succeeded' : 'failed',
      executionId,
      attempt,
      startedAt: new Date().toISOString(),
      durationMs: 1,
    };
    results.splice(0, 1, result);
    await journal.record({ type: 'step-end', stepId: 'fix', result });
  }
  await finishRun(journal, { plan, engine: 'solve', status: 'completed', steps: results, durationMs: 2 });
  await store.close();
}

describe('the code agent in plain SQL (attempts, validations, rollbacks)', () => {
  it('answers with plain SELECTs on a real SQLite file, the long output read back whole', async () => {
    const path = join(directory, 'solve.db');
    await journalSolveRun(path, 'run_solve');
    const database = new Database(path, { readonly: true });
    try {
      const validations = database
        .prepare(
          'select step_id, attempt, command, exit_code, passed, failing_count, output from validations order by seq',
        )
        .all() as Record<string, unknown>[];
      expect(validations.map((row) => [row.step_id, row.attempt, row.command, row.exit_code, row.passed])).toEqual([
        ['fix', 1, '["node","--test"]', 1, 0],
        ['fix', 2, '["node","--test"]', 0, 1],
      ]);
      expect(validations.map((row) => row.failing_count)).toEqual([1, 0]);
      expect(validations[0]?.output).toBe(longOutput);
      // It really was stored once, in `blobs`, not inline.
      expect(
        database
          .prepare("select json_extract(payload, '$.output') from events where type = 'validation-end' order by seq")
          .pluck()
          .all(),
      ).toEqual([null, 'ok 1 - discounts > half price\n']);

      const rollbacks = database.prepare('select run_id, step_id, attempt, restored, removed from rollbacks').all();
      expect(rollbacks).toEqual([
        { run_id: 'run_solve', step_id: 'fix', attempt: 1, restored: '["src/cart.js"]', removed: '["x.tmp"]' },
      ]);
      const attempts = database
        .prepare('select attempt, implementation_run_id, status, rolled_back from attempts order by seq')
        .all();
      expect(attempts).toEqual([
        { attempt: 1, implementation_run_id: 'run_implement_1', status: 'succeeded', rolled_back: 1 },
        { attempt: 2, implementation_run_id: 'run_implement_2', status: 'succeeded', rolled_back: 0 },
      ]);

      // The README's query joins the three.
      const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
      const query = [...readme.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) => match[1] as string)[3] as string;
      const rows = database.prepare(query).all({ run_id: 'run_solve' }) as Record<string, unknown>[];
      expect(rows.map((row) => [row.attempt, row.rolled_back, row.exit_code, row.failing_count, row.restored])).toEqual(
        [
          [1, 1, 1, 1, '["src/cart.js"]'],
          [2, 0, 0, 0, null],
        ],
      );
    } finally {
      database.close();
    }
  });
});

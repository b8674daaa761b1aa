import { join } from 'node:path';
import type { RunEvent } from '@stepwise/core';
import { deriveExecutionId } from '@stepwise/core/engine';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('compact');
const runId = 'run_0123456789abcdef01234567';
const other = deriveExecutionId(runId, 'elsewhere', 9);

/** Events the packing and the time encoding must give back byte for byte, kernel-shaped or not. */
function journal(): RunEvent[] {
  const at = '2026-05-01T10:00:00.123Z';
  const ex = (stepId: string, attempt: number) => deriveExecutionId(runId, stepId, attempt);
  const inputs: Record<string, unknown>[] = [
    {
      type: 'run-start',
      planId: 'p',
      planDigest: 'd',
      plan: { id: 'p', steps: [{ id: 'a', tool: 'echo' }] },
      engine: 'x',
    },
    { type: 'step-start', stepId: 'a', tool: 'echo', attempt: 1, executionId: ex('a', 1) },
    {
      type: 'tool-call',
      stepId: 'a',
      executionId: ex('a', 1),
      attempt: 1,
      tool: 'echo',
      effect: 'read',
      idempotent: true,
      args: {},
    },
    {
      type: 'tool-result',
      stepId: 'a',
      executionId: ex('a', 1),
      tool: 'echo',
      status: 'succeeded',
      startedAt: at,
      durationMs: 1,
    },
    {
      type: 'step-end',
      stepId: 'a',
      result: {
        stepId: 'a',
        tool: 'echo',
        status: 'succeeded',
        executionId: ex('a', 1),
        attempt: 1,
        startedAt: at,
        durationMs: 1,
      },
    },
    // Keys in other orders, and ids that are not the derived ones: kept as they are.
    { type: 'step-start', executionId: ex('a', 2), attempt: 2, stepId: 'a' },
    { type: 'step-start', stepId: 'a', attempt: 3, executionId: other },
    {
      type: 'tool-call',
      stepId: 'a',
      attempt: '3',
      executionId: ex('a', 3),
      tool: 'echo',
      effect: 'read',
      idempotent: false,
      args: {},
    },
    { type: 'step-end', stepId: 'a', result: { executionId: ex('a', 2), attempt: 2, status: 'failed', stepId: 'a' } },
    { type: 'step-end', stepId: 'a', result: { stepId: 'b', executionId: other, attempt: 3, status: 'failed' } },
    { type: 'step-end', stepId: 'a', result: { status: 'failed', attempt: 1 } },
    {
      type: 'step-end',
      stepId: 'a',
      result: { ['__proto__']: 1, 7: 'x', stepId: 'a', executionId: ex('a', 1), attempt: 1, status: 'failed' },
    },
    // A key named '' is a key like any other, at the top level and in a result, packed or not.
    { type: 'progress-report', stepId: 'a', '': 'kept' },
    { type: 'step-start', stepId: 'a', tool: 'echo', attempt: 1, executionId: ex('a', 1), '': 'kept' },
    { type: 'step-end', stepId: 'a', result: { '': 'kept', stepId: 'b', attempt: 1, status: 'failed', startedAt: at } },
  ];
  const times = [at, '2026-05-01T10:00:00Z', '+010000-01-01T00:00:00.000Z', 'yesterday', '1970-01-01T00:00:00.000Z'];
  return inputs.map(
    (input, index) => ({ ...input, runId, seq: index + 1, at: times[index % times.length] }) as RunEvent,
  );
}

describe('compact rows', () => {
  it('read back byte for byte, packed or not, and the views show run ids and ISO times', async () => {
    const path = join(directory, 'compact.db');
    const store = createSqliteStore({ path });
    const events = journal();
    await store.append(runId, events);
    expect(JSON.stringify(await store.readEvents(runId))).toBe(JSON.stringify(events));
    const record = await store.getExecution(deriveExecutionId(runId, 'a', 1));
    expect(record?.startedAt).toBe(events[2]?.at);
    await store.close();

    const database = new Database(path, { readonly: true });
    try {
      const rows = database.prepare('select seq, typeof(at) as kind, packing from events order by seq').all() as {
        kind: string;
        packing: number;
      }[];
      // Kernel-shaped step-start, tool-call, tool-result and step-end leave their ids out; the others do not.
      expect(rows.map((row) => row.packing !== 0)).toEqual([
        false,
        true,
        true,
        true,
        true,
        true,
        false,
        false,
        true,
        false,
        false,
        true,
        false,
        true,
        true,
      ]);
      // Epoch milliseconds as 6-byte integers where the ISO text round-trips, else the text.
      expect(rows.map((row) => row.kind)).toEqual(
        events.map((event) => (event.at.length === 24 && !event.at.startsWith('+') ? 'integer' : 'text')),
      );
      const view = database.prepare('select run_id, seq, type, at from journal order by seq').all();
      expect(view).toEqual(events.map(({ runId: id, seq, type, at }) => ({ run_id: id, seq, type, at })));
      const step = database.prepare('select run_id, ended_at from steps_view').get();
      expect(step).toEqual({ run_id: runId, ended_at: events.at(-1)?.at });
    } finally {
      database.close();
    }
  });
});

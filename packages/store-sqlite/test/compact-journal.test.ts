import { join } from 'node:path';
import type { RunEvent } from '@stepwise/core';
import { deriveExecutionId } from '@stepwise/core/engine';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { chainBytes, chainText } from '../src/chain-column.js';
import { createSqliteStore } from '../src/index.js';
import { temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('compact-journal');
const runId = 'run_0123456789abcdef01234567';
const ex = (stepId: string, attempt: number) => deriveExecutionId(runId, stepId, attempt);
const at = '2026-05-01T10:00:00.123Z';
const chainOf = (seq: number) => `${'abcdefghijklmnopqrstu'.slice(0, 21)}${'AQgw_-9z'[seq % 8]}`;

interface Row {
  readonly seq: number;
  readonly type_code: number | string;
  readonly type: string;
  readonly payload: string;
  readonly packing: number;
  readonly chain: Buffer | null;
}

/**
 * Appends `batches`, each input stamped as the journal does (runId, seq, `at` unless it has its own,
 * then a chain value unless it says `chain: null`; an input with `inPlace` keeps its keys where they
 * are), reads them back, and returns the rows.
 */
async function roundTrip(name: string, batches: Record<string, unknown>[][]) {
  const path = join(directory, `${name}.db`);
  const store = createSqliteStore({ path });
  let seq = 0;
  const appended: RunEvent[] = [];
  for (const inputs of batches) {
    const events = inputs.map((input) => {
      seq++;
      const { chain, at: time, inPlace, ...rest } = input;
      if (inPlace)
        return { ...Object.fromEntries(Object.entries(input).filter(([key]) => key !== 'inPlace')), runId, seq, at };
      // The journal's order: the event, then runId, seq, at, then its chain value.
      return { ...rest, runId, seq, at: time ?? at, ...(chain === null ? {} : { chain: chain ?? chainOf(seq) }) };
    }) as unknown as RunEvent[];
    await store.append(runId, events);
    appended.push(...events);
  }
  const read = await store.readEvents(runId);
  await store.close();
  const database = new Database(path, { readonly: true });
  const rows = database
    .prepare('select seq, type_code, type, payload, packing, chain from events order by id')
    .all() as Row[];
  database.close();
  return { appended, read, rows, payloads: rows.map((row) => JSON.parse(row.payload) as Record<string, unknown>) };
}

const start = {
  type: 'run-start',
  planId: 'p',
  planDigest: 'd',
  plan: { id: 'p', steps: [{ id: 'a', tool: 'echo' }] },
  engine: 'x',
};
const call = (attempt: number, executionId = ex('a', attempt)) => ({
  type: 'tool-call',
  stepId: 'a',
  executionId,
  attempt,
  tool: 'echo',
  effect: 'read',
  idempotent: true,
  args: {},
});
const result = (executionId: string, startedAt: unknown = at) => ({
  type: 'tool-result',
  stepId: 'a',
  executionId,
  tool: 'echo',
  status: 'succeeded',
  startedAt,
  durationMs: 0.056686000000013,
});

describe('the compact journal (schema version 8)', () => {
  it('a chain value is 17 bytes for every character its last place can hold', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (const last of alphabet) {
      const value = `Zz-_09${'q'.repeat(15)}${last}`;
      const bytes = chainBytes(value);
      expect(bytes?.length).toBe(17);
      expect(chainText(bytes as Buffer)).toBe(value);
    }
    for (const other of ['short', `${'a'.repeat(21)}=`, 'a'.repeat(23), 7, `${'a'.repeat(21)}+`]) {
      expect(chainBytes(other)).toBeUndefined();
    }
  });

  it("leaves a tool-result's execution id out only when it derives from its call's attempt", async () => {
    const { appended, read, payloads, rows } = await roundTrip('tool-result-ids', [
      [start, { type: 'step-start', stepId: 'a', tool: 'echo', attempt: 1, executionId: ex('a', 1) }, call(1)],
      // Its call is in the batch before: the attempt comes from the fold.
      [result(ex('a', 1))],
      [call(2), result(ex('a', 2))],
      // Not the id attempt 3 derives (nor any other's): kept.
      [call(3, 'ex_custom'), result('ex_custom')],
      // Attempt 300 does not fit the packing's 8 bits: kept.
      [call(300), result(ex('a', 300))],
      // The id of attempt 1 after a call of attempt 4: packed with attempt 1 (the fold's), read back the same.
      [call(4), result(ex('a', 1))],
      // A batch of more than 16 events (which indexes its calls rather than looking back for them).
      Array.from({ length: 9 }, (_, index) => [call(10 + index), result(ex('a', 10 + index))]).flat(),
    ]);
    expect(JSON.stringify(read)).toBe(JSON.stringify(appended));
    const results = rows.flatMap((row, index) => (row.type === 'tool-result' ? [payloads[index]] : []));
    expect(results.map((payload) => payload?.executionId)).toEqual([
      undefined,
      undefined,
      'ex_custom',
      ex('a', 300),
      undefined,
      ...Array.from({ length: 9 }, () => undefined),
    ]);
  });

  it('holds start times as milliseconds before the event only when both times are exact', async () => {
    const early = '2026-05-01T09:59:58.100Z';
    const stepEnd = (startedAt: unknown, time?: string) => ({
      type: 'step-end',
      stepId: 'a',
      result: { stepId: 'a', status: 'succeeded', attempt: 1, startedAt, durationMs: 1.5 },
      ...(time === undefined ? {} : { at: time }),
    });
    const { appended, read, payloads } = await roundTrip('started-at', [
      [
        start,
        call(1),
        result(ex('a', 1), early),
        // Not what toISOString writes, a number, a time after the event, and an event time that is not exact.
        result(ex('a', 1), '2026-05-01T10:00:00Z'),
        result(ex('a', 1), 17),
        result(ex('a', 1), '2026-05-01T10:00:01.000Z'),
        { ...result(ex('a', 1), early), at: 'later' },
        stepEnd(early),
        stepEnd('yesterday'),
        stepEnd(early, '2026-05-01T10:00:00Z'),
      ],
    ]);
    expect(JSON.stringify(read)).toBe(JSON.stringify(appended));
    const startedAt = payloads
      .slice(2)
      .map((payload) => payload.startedAt ?? (payload.result as { startedAt: unknown }).startedAt);
    expect(startedAt).toEqual([2023, '2026-05-01T10:00:00Z', 17, -877, early, 2023, 'yesterday', early]);
  });

  it('moves a chain value to its column only when it is the last key and has the form core writes', async () => {
    const resume = (extra: Record<string, unknown>) => ({ type: 'run-resume', owner: 'w', interrupted: [], ...extra });
    const { appended, read, rows, payloads } = await roundTrip('chains', [
      [
        start,
        resume({}),
        resume({ chain: 'not a chain value' }),
        resume({ chain: null }),
        // The chain value before the columns: kept in the payload, where reads put it back.
        { type: 'run-resume', owner: 'w', chain: chainOf(5), interrupted: [], inPlace: true },
      ],
    ]);
    // A chain value kept in the payload reads back before runId, seq and at (as before version 8).
    expect(read).toEqual(appended);
    for (const index of [0, 1, 3, 4]) expect(JSON.stringify(read[index])).toBe(JSON.stringify(appended[index]));
    expect(rows.map((row) => (row.chain === null ? null : chainText(row.chain)))).toEqual([
      chainOf(1),
      chainOf(2),
      null,
      null,
      null,
    ]);
    expect(payloads.map((payload) => payload.chain)).toEqual([
      undefined,
      undefined,
      'not a chain value',
      undefined,
      chainOf(5),
    ]);
  });

  it('stores a known type as its code and any other as its text; the type column shows the text', async () => {
    const { appended, read, rows } = await roundTrip('types', [
      [start, { type: 'deploy-end', target: 'prod' }, { type: '12', note: 'a type that looks like a code' }],
    ]);
    expect(JSON.stringify(read)).toBe(JSON.stringify(appended));
    expect(rows.map((row) => [row.type_code, row.type])).toEqual([
      [1, 'run-start'],
      ['deploy-end', 'deploy-end'],
      ['12', '12'],
    ]);
  });
});

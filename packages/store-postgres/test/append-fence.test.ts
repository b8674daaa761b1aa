import { ErrorCodes, type RunEvent, readAll, StepwiseError } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { query } from './worker-processes.js';

const postgres = await testPostgres();
const TTL = 500;

const plan = makePlan([{ id: 'a', tool: 'echo', args: {} }], { id: 'plan_fence' });
const runStart = (runId: string): RunEvent =>
  ({
    type: 'run-start',
    runId,
    seq: 1,
    at: new Date().toISOString(),
    planId: plan.id,
    planDigest: 'digest',
    plan,
    engine: 'dag',
  }) as RunEvent;
const stepStart = (runId: string, seq: number): RunEvent =>
  ({
    type: 'step-start',
    runId,
    seq,
    at: new Date().toISOString(),
    stepId: 'a',
    tool: 'echo',
    attempt: 1,
    executionId: `ex_${seq}`,
  }) as RunEvent;

async function refusal(promise: Promise<unknown>): Promise<StepwiseError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!StepwiseError.isInstance(error)) throw new Error(`expected a StepwiseError, got ${String(error)}`);
  return error;
}

describe.skipIf(!postgres)('the append statement is the fence', () => {
  const url = postgres?.url as string;
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    postgres?.server?.close();
  });

  it('refuses a superseded writer’s append (E501, naming the holder) and writes nothing, whatever its seq', async () => {
    const schema = `fence_${process.pid}`;
    // Two processes' stores over one database: the first loses the run to the second.
    const first = createPostgresStore({ connectionString: url, schema });
    const second = createPostgresStore({ connectionString: url, schema });
    stores.push(first, second);
    const runId = 'run_fenced';
    const old = await first.acquireLease(runId, 'worker-a', TTL);
    if (!old) throw new Error('the first lease was refused');
    await first.append(runId, [runStart(runId)], old);
    let taken = await second.acquireLease(runId, 'worker-b', TTL);
    while (!taken) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      taken = await second.acquireLease(runId, 'worker-b', TTL);
    }
    const lastSeq = async () =>
      (await query<{ last_seq: number }>(url, `select last_seq from ${schema}.runs where id = $1`, [runId]))[0]
        ?.last_seq;

    // The next seq (the seq check would let it through) and a seq taken by nobody yet: both fenced.
    for (const events of [[stepStart(runId, 2)], [stepStart(runId, 2), stepStart(runId, 3)]]) {
      const error = await refusal(first.append(runId, events, old));
      expect(error.code).toBe(ErrorCodes.LEASE_CONFLICT);
      expect(error.message).toContain('worker-b');
    }
    // Without a lease, while another holds a live one: fenced as well.
    expect((await refusal(first.append(runId, [stepStart(runId, 2)]))).code).toBe(ErrorCodes.LEASE_CONFLICT);
    expect(await lastSeq()).toBe(1);
    expect((await readAll(second, runId)).map((event) => event.seq)).toEqual([1]);

    // The holder writes on; then the superseded writer, even with the seq after it, still cannot.
    await second.append(runId, [stepStart(runId, 2)], taken);
    expect((await refusal(first.append(runId, [stepStart(runId, 3)], old))).code).toBe(ErrorCodes.LEASE_CONFLICT);
    expect(await lastSeq()).toBe(2);
    expect((await readAll(first, runId)).map((event) => [event.seq, event.type])).toEqual([
      [1, 'run-start'],
      [2, 'step-start'],
    ]);
  });
});

if (!postgres) {
  describe('the append statement is the fence', () => {
    it.skip('needs a Postgres server (see the message above)', () => undefined);
  });
}

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import { respond } from '../run/respond.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan } from '../testing/fixtures.js';
import { defineTool } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import type { RunEvent } from './events.js';
import { chainValue, journalKeyObject } from './journal-chain.js';
import { JOURNAL_VERSION } from './journal-version.js';
import { readVerifiedJournal } from './read-verified-journal.js';
import { readAll } from './run-store.js';
import { checkJournal, verifyJournal } from './verify-journal.js';
import { verifyRun } from './verify-run.js';

const KEY = 'a journal key of more than sixteen bytes';
const OTHER_KEY = Buffer.alloc(32, 7);

/** A journal written by release 0.1 (commit a0e20e4): format 1, no chain. */
const released = (runId: string): RunEvent[] =>
  readFileSync(new URL(`../../test/fixtures/journal-v1/${runId}.jsonl`, import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as RunEvent);

const calls: string[] = [];
const tools = new ToolRegistry([
  defineTool({
    name: 'produce',
    description: 'returns what it was given, with a date',
    input: { type: 'object', properties: { value: {} } },
    effect: 'read',
    execute: ({ value }) => ({ value, when: new Date(Date.UTC(2030, 0, 1)) }),
  }),
  defineTool({
    name: 'publish',
    description: 'a write that waits for a person',
    input: { type: 'object' },
    effect: 'write',
    idempotent: false,
    execute: () => {
      calls.push('publish');
      return { published: true };
    },
  }),
]);

const plan = makePlan([
  { id: 'a', tool: 'produce', args: { value: { z: 1, a: [1, 2.5, 'ü'], m: { y: null, b: true } } } },
  { id: 'b', tool: 'produce', args: { value: 'second' }, dependsOn: ['a'] },
  { id: 'c', tool: 'produce', args: { value: 3 }, dependsOn: ['a'] },
]);

function engine(store: MemoryStore, journalKey?: string | Uint8Array, pause = false) {
  return createPolicyEngine({
    policy: permissivePolicy({ tools }),
    options: {
      tools,
      store,
      ...(journalKey === undefined ? {} : { journalKey }),
      ...(pause ? { approvals: { policy: { tools: { publish: 'pause' } } } } : {}),
    },
  });
}

/** The events of one finished run, as JSON text round-tripped (what a database gives back). */
async function journalOf(journalKey?: string | Uint8Array): Promise<{ runId: string; events: RunEvent[] }> {
  const store = new MemoryStore();
  const handle = engine(store, journalKey).run(plan);
  expect((await handle.result).status).toBe('completed');
  const events = (await readAll(store, handle.runId)).map((event) => JSON.parse(JSON.stringify(event)) as RunEvent);
  return { runId: handle.runId, events };
}

const copy = (events: readonly RunEvent[]) => events.map((event) => structuredClone(event));
const at = (events: readonly RunEvent[], type: string) => events.findIndex((event) => event.type === type);

describe('the hash chain RunJournal writes', () => {
  it('links every event, without a key as SHA-256, and verifies after a JSON round trip', async () => {
    const { runId, events } = await journalOf();
    expect(events[0]).toMatchObject({ journalVersion: JOURNAL_VERSION, chainAlgorithm: 'sha-256' });
    expect(events.every((event) => typeof event.chain === 'string' && event.chain.length === 22)).toBe(true);
    expect(new Set(events.map((event) => event.chain)).size).toBe(events.length);
    expect(verifyJournal(runId, events)).toEqual({
      ok: true,
      runId,
      events: events.length,
      lastSeq: events.length,
      integrity: 'unkeyed',
      lastChain: events.at(-1)?.chain,
    });
    // The first value is the digest of the run id and the event: recomputed here from its definition.
    const { chain, ...first } = events[0] as RunEvent;
    expect(chain).toBe(chainValue(runId, first, undefined));
  });

  it('links concurrent steps in seq order through group commits, batched durability included', async () => {
    for (const durability of ['step', 'batched'] as const) {
      const store = new MemoryStore();
      const fan = createPolicyEngine({
        policy: permissivePolicy({ tools }),
        options: { tools, store, journalKey: KEY, durability },
      });
      const steps = Array.from({ length: 40 }, (_, index) => ({
        id: `m${index}`,
        tool: 'produce',
        args: { value: index },
      }));
      const handle = fan.run(
        makePlan([...steps, { id: 'join', tool: 'produce', dependsOn: steps.map((step) => step.id) }]),
      );
      expect((await handle.result).status).toBe('completed');
      const events = await readAll(store, handle.runId);
      expect(verifyJournal(handle.runId, events, { journalKey: KEY })).toMatchObject({
        ok: true,
        events: events.length,
      });
    }
  });

  it('does not depend on the order of keys (a store may reorder them)', async () => {
    const { runId, events } = await journalOf();
    const reordered = events.map(
      (event) => JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(event).reverse()))) as RunEvent,
    );
    expect(verifyJournal(runId, reordered)).toMatchObject({ ok: true, integrity: 'unkeyed' });
  });

  it('with a key is HMAC-SHA-256: verifies with that key only', async () => {
    const { runId, events } = await journalOf(KEY);
    expect(events[0]).toMatchObject({ chainAlgorithm: 'hmac-sha-256' });
    expect(verifyJournal(runId, events, { journalKey: KEY })).toMatchObject({ ok: true, integrity: 'keyed' });
    expect(verifyJournal(runId, events, { journalKey: Buffer.from(KEY) })).toMatchObject({ integrity: 'keyed' });
    // Without the key only the shape can be checked, and the result says so.
    expect(verifyJournal(runId, events)).toMatchObject({ ok: true, integrity: 'keyed-unverified' });
    expect(verifyJournal(runId, events, { journalKey: OTHER_KEY })).toEqual({
      ok: false,
      runId,
      seq: 1,
      eventType: 'run-start',
      reason: 'mismatch',
      keyed: true,
    });
    expect(() => checkJournal(runId, events, { journalKey: OTHER_KEY })).toThrow(
      /or the run was written with another journal key/,
    );
  });

  it('continues over pages (`after`) exactly as over the whole journal', async () => {
    const { runId, events } = await journalOf(KEY);
    const first = verifyJournal(runId, events.slice(0, 5), { journalKey: KEY });
    if (!first.ok) throw new Error('the first page must verify');
    expect(verifyJournal(runId, events.slice(5), { journalKey: KEY, after: first })).toEqual(
      verifyJournal(runId, events, { journalKey: KEY }),
    );
    const forged = copy(events);
    (forged[7] as { at: string }).at = '2020-01-01T00:00:00.000Z';
    expect(verifyJournal(runId, forged.slice(5), { journalKey: KEY, after: first })).toMatchObject({
      ok: false,
      seq: 8,
      reason: 'mismatch',
    });
  });

  it('refuses a key shorter than 16 bytes with E601 naming journalKey', () => {
    expect(() => journalKeyObject('short')).toThrow(
      expect.objectContaining({ code: ErrorCodes.CONFIG_INVALID, location: 'journalKey' }),
    );
    expect(() => engine(new MemoryStore(), new Uint8Array(8))).toThrow(
      expect.objectContaining({ code: ErrorCodes.CONFIG_INVALID, location: 'journalKey' }),
    );
  });
});

describe('a journal changed behind the store', () => {
  it('a changed output: the first changed event, named with its type', async () => {
    const { runId, events } = await journalOf();
    const forged = copy(events);
    const end = at(forged, 'step-end');
    (forged[end] as { result: { output: unknown } }).result.output = { value: 'forged' };
    expect(verifyJournal(runId, forged)).toEqual({
      ok: false,
      runId,
      seq: end + 1,
      eventType: 'step-end',
      reason: 'mismatch',
      keyed: false,
    });
    expect(() => checkJournal(runId, forged)).toThrow(
      expect.objectContaining({
        code: ErrorCodes.JOURNAL_TAMPERED,
        location: `${runId}#${end + 1}`,
        message: `run ${runId}: event ${end + 1} (step-end) does not match the journal's hash chain — the database was changed outside Stepwise`,
        details: { runId, seq: end + 1, eventType: 'step-end', reason: 'mismatch' },
      }),
    );
  });

  it('a changed status, seq or time is caught (the envelope is covered too)', async () => {
    const { runId, events } = await journalOf();
    const last = events.length - 1;
    const status = copy(events);
    (status[last] as { status: string }).status = 'failed';
    expect(verifyJournal(runId, status)).toMatchObject({ ok: false, seq: last + 1, eventType: 'run-end' });
    const time = copy(events);
    (time[2] as { at: string }).at = '2001-01-01T00:00:00.000Z';
    expect(verifyJournal(runId, time)).toMatchObject({ ok: false, seq: 3, reason: 'mismatch' });
  });

  it('a deleted event, two events swapped, a removed chain value', async () => {
    const { runId, events } = await journalOf();
    const deleted = copy(events);
    deleted.splice(3, 1);
    expect(verifyJournal(runId, deleted)).toMatchObject({ ok: false, seq: 5, reason: 'sequence' });
    // Renumbered after the deletion: the chain still breaks at the first moved event.
    const renumbered = deleted.map((event, index) => ({ ...event, seq: index + 1 }));
    expect(verifyJournal(runId, renumbered)).toMatchObject({ ok: false, seq: 4, reason: 'mismatch' });
    const swapped = copy(events);
    [swapped[3], swapped[4]] = [swapped[4] as RunEvent, swapped[3] as RunEvent];
    expect(verifyJournal(runId, swapped)).toMatchObject({ ok: false, seq: 5, reason: 'sequence' });
    const missing = copy(events);
    delete (missing[4] as { chain?: string }).chain;
    expect(verifyJournal(runId, missing)).toMatchObject({ ok: false, seq: 5, reason: 'missing' });
  });

  it('recomputed without the key: refused with the key, however it was recomputed', async () => {
    const { runId, events } = await journalOf(KEY);
    const end = at(events, 'run-end');
    const relink = (algorithm: string) => {
      const forged = copy(events);
      (forged[end] as { status: string }).status = 'failed';
      let previous = runId;
      for (const event of forged) {
        const record = event as unknown as Record<string, unknown>;
        if (record.seq === 1) record.chainAlgorithm = algorithm;
        delete record.chain;
        record.chain = previous = chainValue(previous, record, undefined);
      }
      return forged;
    };
    expect(verifyJournal(runId, relink('sha-256'), { journalKey: KEY })).toMatchObject({
      ok: false,
      seq: 1,
      reason: 'not-keyed',
    });
    expect(verifyJournal(runId, relink('hmac-sha-256'), { journalKey: KEY })).toMatchObject({
      ok: false,
      seq: 1,
      reason: 'mismatch',
    });
    // Without a key a recomputed chain cannot be told from the real one: the README says so.
    expect(verifyJournal(runId, relink('sha-256'))).toMatchObject({ ok: true, integrity: 'unkeyed' });
    expect(verifyJournal(runId, relink('md5'))).toMatchObject({ ok: false, seq: 1, reason: 'algorithm' });
  });
});

describe('journals written before chains existed (format 1)', () => {
  it('verify as unchained; a chain value in one, or format 2 without one, is refused', () => {
    const events = released('run_fixture_release');
    expect(verifyJournal('run_fixture_release', events)).toMatchObject({
      ok: true,
      integrity: 'unchained',
      lastChain: undefined,
      events: events.length,
    });
    expect(verifyJournal('run_fixture_release', events, { journalKey: KEY })).toMatchObject({ integrity: 'unchained' });
    const stray = copy(events);
    (stray[4] as { chain?: string }).chain = 'AAAAAAAAAAAAAAAAAAAAAA';
    expect(verifyJournal('run_fixture_release', stray)).toMatchObject({ ok: false, seq: 5, reason: 'unexpected' });
    const format2 = copy(events);
    (format2[0] as { journalVersion?: number }).journalVersion = 2;
    expect(verifyJournal('run_fixture_release', format2)).toMatchObject({ ok: false, seq: 1, reason: 'missing' });
  });

  it('a resumed format-1 run stays unchained and verifies', async () => {
    const store = new MemoryStore();
    await store.append('run_fixture_waiting', released('run_fixture_waiting'));
    await respond(
      store,
      'run_fixture_waiting',
      { stepId: 'deploy', decision: 'approve', by: 'ops' },
      { journalKey: KEY },
    );
    const events = await readAll(store, 'run_fixture_waiting');
    expect(events.some((event) => event.chain !== undefined)).toBe(false);
    expect(verifyJournal('run_fixture_waiting', events, { journalKey: KEY })).toMatchObject({
      ok: true,
      integrity: 'unchained',
    });
  });
});

describe('where a journal is loaded', () => {
  async function waitingRun(journalKey: string) {
    const store = new MemoryStore();
    const waiting = engine(store, journalKey, true);
    const pausePlan = makePlan([
      { id: 'a', tool: 'produce', args: { value: 1 } },
      { id: 'p', tool: 'publish', dependsOn: ['a'] },
    ]);
    const handle = waiting.run(pausePlan);
    expect((await handle.result).status).toBe('waiting');
    return { store, runId: handle.runId, engine: waiting, plan: pausePlan };
  }

  it('respond and resume continue a keyed chain that then verifies', async () => {
    const { store, runId, engine: waiting } = await waitingRun(KEY);
    await respond(store, runId, { stepId: 'p', decision: 'approve', by: 'ops' }, { journalKey: KEY });
    expect((await waiting.resume(runId).result).status).toBe('completed');
    const events = await readAll(store, runId);
    expect(events.map((event) => event.type)).toContain('run-resume');
    expect(verifyJournal(runId, events, { journalKey: KEY })).toMatchObject({ ok: true, integrity: 'keyed' });
  });

  it('a keyed run is not continued without its key: E601, nothing journaled', async () => {
    const { store, runId } = await waitingRun(KEY);
    const before = (await readAll(store, runId)).length;
    const needsKey = expect.objectContaining({ code: ErrorCodes.CONFIG_INVALID, location: 'journalKey' });
    await expect(respond(store, runId, { stepId: 'p', decision: 'approve', by: 'ops' })).rejects.toEqual(needsKey);
    await expect(engine(store, undefined, true).resume(runId).result).rejects.toEqual(needsKey);
    expect((await readAll(store, runId)).length).toBe(before);
  });

  it('readVerifiedJournal follows a run in pages; verifyRun checks it and what the store says of it', async () => {
    const { store, runId } = await waitingRun(KEY);
    const first = await readVerifiedJournal(store, runId, { journalKey: KEY });
    expect(first.verification).toMatchObject({ integrity: 'keyed', lastSeq: first.events.length });
    await respond(store, runId, { stepId: 'p', decision: 'deny', by: 'ops' }, { journalKey: KEY });
    const next = await readVerifiedJournal(store, runId, { journalKey: KEY, after: first.verification });
    expect(next.events.map((event) => event.type)).toEqual(['approval-response']);
    expect(next.verification.lastSeq).toBe(first.events.length + 1);
    expect(await verifyRun(store, runId, { journalKey: KEY })).toEqual(next.verification);
    (next.events[0] as { by: string }).by = 'someone else';
    expect(await verifyRun(store, runId, { journalKey: KEY })).toMatchObject({
      ok: false,
      seq: first.events.length + 1,
    });
    await expect(verifyRun(store, 'run_missing')).rejects.toMatchObject({ code: ErrorCodes.RUN_NOT_FOUND });
  });

  it('respond and resume refuse a changed journal with E507 before anything runs or is journaled', async () => {
    const { store, runId, engine: waiting, plan: pausePlan } = await waitingRun(KEY);
    // MemoryStore keeps the objects it was given: changing one is changing the store behind its back.
    const events = await readAll(store, runId);
    const request = events.find((event) => event.type === 'approval-request') as RunEvent & { args: unknown };
    const original = request.args;
    request.args = { forged: true };
    const refused = expect.objectContaining({
      code: ErrorCodes.JOURNAL_TAMPERED,
      details: expect.objectContaining({ runId, seq: request.seq, eventType: 'approval-request' }),
    });
    await expect(
      respond(store, runId, { stepId: 'p', decision: 'approve', by: 'ops' }, { journalKey: KEY }),
    ).rejects.toEqual(refused);
    const before = calls.length;
    await expect(waiting.resume(runId).result).rejects.toEqual(refused);
    // Running the same plan under the run's id replays a run that stopped: not from a changed journal.
    await expect(waiting.run(pausePlan, { runId }).result).rejects.toEqual(refused);
    expect(calls.length).toBe(before);
    expect((await readAll(store, runId)).length).toBe(events.length);
    // The lease was released: with the journal put back, the run answers again.
    request.args = original;
    await expect(
      respond(store, runId, { stepId: 'p', decision: 'approve', by: 'ops' }, { journalKey: KEY }),
    ).resolves.toMatchObject({ type: 'approval-response' });
  });
});

import { describe, expect, it } from 'vitest';
import type { RunEvent } from './events.js';
import { ChainWriter, journalKeyObject } from './journal-chain.js';
import { verifyJournal } from './verify-journal.js';

const runId = 'run_golden';
const at = '2030-01-01T00:00:00.000Z';
const plan = {
  id: 'plan_golden',
  version: 1,
  goal: 'Golden "chain" — ünïcode ✓',
  steps: [
    { id: 'read', tool: 'file_read', args: { path: 'a b/\u00e9.txt', options: { z: 1, a: [1, 2.5, -0, 1e21] } } },
    {
      id: 'write',
      tool: 'file_write',
      dependsOn: ['read'],
      args: { contents: { $ref: 'read', pointer: '/contents' } },
    },
  ],
};
const result = {
  stepId: 'read',
  tool: 'file_read',
  status: 'succeeded',
  executionId: 'ex_1',
  attempt: 1,
  startedAt: at,
  durationMs: 1.2416890000000649,
  output: { contents: 'line\n\t"quoted"\\ \u0001', n: 12, nested: { b: null, a: true } },
};

/** Events of every common shape, with nested keys out of order, escapes, floats and -0. */
const goldenEvents = [
  {
    type: 'run-start',
    journalVersion: 2,
    planId: plan.id,
    planDigest: 'd'.repeat(64),
    plan,
    engine: 'dag',
    options: { concurrency: 16, toolConcurrency: {}, retry: {}, adjust: false },
    runId,
    seq: 1,
    at,
  },
  { type: 'step-start', stepId: 'read', tool: 'file_read', attempt: 1, executionId: 'ex_1', runId, seq: 2, at },
  {
    type: 'tool-call',
    stepId: 'read',
    executionId: 'ex_1',
    attempt: 1,
    tool: 'file_read',
    effect: 'read',
    idempotent: true,
    args: plan.steps[0]?.args,
    runId,
    seq: 3,
    at,
  },
  {
    type: 'tool-result',
    stepId: 'read',
    executionId: 'ex_1',
    tool: 'file_read',
    status: 'succeeded',
    startedAt: at,
    durationMs: 0.10258299999998144,
    output: result.output,
    runId,
    seq: 4,
    at,
  },
  { type: 'step-end', stepId: 'read', result, runId, seq: 5, at },
  { type: 'run-end', status: 'completed', durationMs: 13, runId, seq: 6, at },
] as unknown as RunEvent[];

// Chain values as Stepwise computed them before canonicalJson learned key shapes (commit 24ae79f):
// journals written then must still verify, so the chain must stay the same function of the events.
const EARLIER_PLAIN = [
  'nPq5Vh0uV4xmEPvgtocLBD',
  'J0LT4Gvr-HEII8QGrZDN-g',
  'Wtq2NAuvnxOwRSJ7412kLM',
  '1JvNRYFZNV_eYZhcT6AW3i',
  'wa-Hm3xXvxbTpNYXKvFZlt',
  'Dx5ihlOOgpGpnlEXR9d2Cm',
];
const KEY = 'golden-key-0123456789';
const EARLIER_KEYED = [
  'yxsCE1klswexOp6IZ0qAEu',
  'qeAc7_ULZI2ncgcldvNVf0',
  'GlaYiSGEIthDEp3wWdKzuw',
  'lPZ2Z65ko0tfdOLaqlwdI2',
  '3iTbripAMgJPfZI0qOmdk0',
  'lJSIJmC7kTnN_iwYnrHuOr',
];

function stamped(key: string | undefined): RunEvent[] {
  const writer = new ChainWriter(runId, 0, undefined, key === undefined ? undefined : journalKeyObject(key));
  const events = structuredClone(goldenEvents);
  for (const event of events) writer.stamp(event);
  return events;
}

describe('the journal chain', () => {
  it.each([
    ['sha-256', undefined, EARLIER_PLAIN],
    ['hmac-sha-256', KEY, EARLIER_KEYED],
  ] as const)('gives the values it gave before (%s), twice over, and the journal verifies', (_name, key, earlier) => {
    // Twice: the second time every object's key order comes from what the first one learned.
    for (let pass = 0; pass < 2; pass++) {
      const events = stamped(key);
      expect(events.map((event) => event.chain)).toEqual(earlier);
      const options = key === undefined ? {} : { journalKey: key };
      expect(verifyJournal(runId, events, options)).toMatchObject({
        ok: true,
        integrity: key ? 'keyed' : 'unkeyed',
        events: 6,
      });
    }
  });
});

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createPolicyEngine, journaledPolicy, permissivePolicy, policyFromJournal } from '../engine.js';
import { ErrorCodes } from '../errors.js';
import { defineTool, respond, ToolRegistry } from '../index.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan } from '../testing/fixtures.js';
import type { RunEvent, RunStartEvent } from './events.js';
import { executionRecord, foldRun } from './fold-run.js';
import { JOURNAL_VERSION } from './journal-version.js';
import { readAll } from './run-store.js';

/** A journal written by release 0.1 (commit a0e20e4): see packages/store-sqlite/test/fixtures/journal-v1. */
const released = (runId: string): RunEvent[] =>
  readFileSync(new URL(`../../test/fixtures/journal-v1/${runId}.jsonl`, import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as RunEvent);

function tools(calls: string[]): ToolRegistry {
  return new ToolRegistry([
    defineTool({
      name: 'fetch_data',
      description: 'data',
      input: { type: 'object' },
      effect: 'read',
      execute: () => ({}),
    }),
    defineTool({
      name: 'publish_note',
      description: 'publishes',
      input: { type: 'object', properties: { text: { type: 'string' } } },
      effect: 'write',
      idempotent: false,
      execute: ({ text }) => {
        calls.push(String(text));
        return { exitCode: 0 };
      },
    }),
  ]);
}

describe('journals written before formats were numbered (format 1)', () => {
  it('fold: steps, a retry, an approval, a revision, model calls, usage and the audit bundle', () => {
    const events = released('run_fixture_release');
    expect((events[0] as RunStartEvent).journalVersion).toBeUndefined();
    const run = foldRun(events);
    expect(run.status).toBe('completed');
    expect(
      Object.fromEntries([...run.steps].map(([id, step]) => [id, [step.status, step.attempt, step.tool]])),
    ).toEqual({
      fetch: ['succeeded', 1, 'fetch_data'],
      parse: ['succeeded', 2, 'flaky_parse'],
      summarize: ['succeeded', 1, undefined],
      publish: ['succeeded', 1, 'publish_note'],
      audit: ['succeeded', 1, 'fetch_data'],
    });
    expect(run.revisions.map((revision) => revision.revision)).toEqual([1]);
    expect(run.modelCalls).toHaveLength(2);
    expect(run.usage).toEqual({ promptTokens: 240, completionTokens: 60, totalTokens: 300 });
    const publish = run.steps.get('publish')?.executionId as string;
    expect(executionRecord(run, publish)).toMatchObject({
      tool: 'publish_note',
      status: 'succeeded',
      exitCode: 0,
      why: { goal: 'Publish a summary of the inputs', approvals: [{ decision: 'approved', by: 'reviewer' }] },
    });
  });

  it('resume: the waiting run completes once a person approved, running only the step that waited', async () => {
    const store = new MemoryStore();
    await store.append('run_fixture_waiting', released('run_fixture_waiting'));
    expect(foldRun(await readAll(store, 'run_fixture_waiting')).status).toBe('waiting');
    const calls: string[] = [];
    const registry = tools(calls);
    const policy = permissivePolicy({ tools: registry }, { name: 'agentic', validation: 'agentic' });
    const engine = createPolicyEngine({
      policy,
      options: { tools: registry, store },
      journaledOptions: journaledPolicy(policy),
      policyFromJournal: (journaled) => policyFromJournal(journaled, policy),
    });
    await respond(store, 'run_fixture_waiting', { stepId: 'deploy', decision: 'approve', by: 'ops' });
    expect((await engine.resume('run_fixture_waiting').result).status).toBe('completed');
    expect(calls).toEqual(['deploy']);
  });
});

describe('the journal format', () => {
  const plan = makePlan([{ id: 'a', tool: 'fetch_data' }]);

  it('is recorded in every run-start', async () => {
    const store = new MemoryStore();
    const engine = createPolicyEngine({
      policy: permissivePolicy({ tools: tools([]) }),
      options: { tools: tools([]), store },
    });
    const handle = engine.run(plan);
    await handle.result;
    const [start] = await readAll(store, handle.runId);
    expect(start).toMatchObject({ type: 'run-start', journalVersion: JOURNAL_VERSION });
    // Format 2: chained events (see verify-journal.test.ts).
    expect(JOURNAL_VERSION).toBe(2);
  });

  const start = (journalVersion: unknown): RunEvent[] => [
    {
      type: 'run-start',
      journalVersion,
      planId: plan.id,
      planDigest: 'digest',
      plan,
      engine: 'dag',
      runId: 'run_future',
      seq: 1,
      at: '2030-01-01T00:00:00.000Z',
    } as RunEvent,
  ];

  it('of a newer release is refused by the fold with E506, naming the run and the version', () => {
    expect(() => foldRun(start(3))).toThrow(
      expect.objectContaining({
        code: ErrorCodes.JOURNAL_VERSION_UNSUPPORTED,
        location: 'run_future#1',
        message: expect.stringMatching(/run run_future was journaled in format version 3, newer than .* \(up to 2\)/),
        details: { runId: 'run_future', journalVersion: 3, supported: 2 },
      }),
    );
  });

  it.each([0, 1.5, '1', null])('%j is not a format: E506', (version) => {
    expect(() => foldRun(start(version))).toThrow(
      expect.objectContaining({
        code: ErrorCodes.JOURNAL_VERSION_UNSUPPORTED,
        message: expect.stringMatching(/not a version/),
      }),
    );
  });

  it('2, 1 and an absent version are read', () => {
    expect(foldRun(start(2)).planId).toBe(plan.id);
    expect(foldRun(start(1)).planId).toBe(plan.id);
    expect(foldRun(start(undefined)).planId).toBe(plan.id);
  });
});

import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan } from '../testing/fixtures.js';
import { defineTool } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import type { RunEvent } from './events.js';
import { type Lease, readAll } from './run-store.js';
import { verifyJournal } from './verify-journal.js';

const away = () => new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'the database is restarting', { retryable: true });

/**
 * A store whose database goes away: `loseAnswers` appends that commit and then fail (the answer
 * lost on the way back), `awayFor` ms in which every call fails before doing anything.
 */
class FlakyStore extends MemoryStore {
  loseAnswers = 0;
  awayUntil = 0;
  /** Types of the batch the next failures wait for (e.g. a batch holding a tool-call). */
  when: (events: readonly RunEvent[]) => boolean = () => true;
  failures = 0;

  awayFor(ms: number): void {
    this.awayUntil = Date.now() + ms;
  }

  #away(): boolean {
    if (Date.now() >= this.awayUntil) return false;
    this.failures++;
    return true;
  }

  override async append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    if (this.#away()) throw away();
    if (this.loseAnswers > 0 && this.when(events)) {
      this.loseAnswers--;
      this.failures++;
      await super.append(runId, events, lease);
      throw away();
    }
    return super.append(runId, events, lease);
  }

  override read(runId: string, afterSeq?: number): AsyncIterable<RunEvent> {
    if (this.#away()) {
      return {
        [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(away()) }),
      };
    }
    return super.read(runId, afterSeq);
  }

  override renewLease(lease: Lease): Promise<Lease> {
    return this.#away() ? Promise.reject(away()) : super.renewLease(lease);
  }
}

function sending(calls: string[]) {
  return new ToolRegistry([
    defineTool({
      name: 'send',
      description: 'Sends once: not idempotent.',
      input: { type: 'object' },
      effect: 'write',
      execute: (_input, context) => {
        calls.push(context.stepId);
        return { sent: context.stepId };
      },
    }),
  ]);
}

function engineOver(store: MemoryStore, calls: string[], leaseTtlMs = 5_000) {
  const options = { tools: sending(calls), store, leaseTtlMs };
  return createPolicyEngine({ policy: permissivePolicy(options), options });
}

const chain = makePlan([
  { id: 'first', tool: 'send', args: {} },
  { id: 'second', tool: 'send', args: {}, dependsOn: ['first'] },
]);

async function expectWholeJournal(store: MemoryStore, runId: string): Promise<RunEvent[]> {
  const events = await readAll(store, runId);
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  expect(verifyJournal(runId, events)).toMatchObject({ ok: true });
  expect(events.some((event) => event.type === 'run-resume')).toBe(false);
  return events;
}

describe('a store that goes away while a batch is committed', () => {
  it('takes a batch whose answer was lost as committed: the tool runs once, nothing is journaled twice', async () => {
    const store = new FlakyStore();
    store.when = (events) => events.some((event) => event.type === 'tool-call');
    store.loseAnswers = 2;
    const calls: string[] = [];
    const result = await engineOver(store, calls).run(chain, { runId: 'run_lost_answers' }).result;
    expect(result.status).toBe('completed');
    expect(store.failures).toBe(2);
    expect(calls).toEqual(['first', 'second']);
    const events = await expectWholeJournal(store, 'run_lost_answers');
    expect(events.filter((event) => event.type === 'tool-call')).toHaveLength(2);
  });

  it('appends a batch again once the store answers, when none of it was taken', async () => {
    const store = new FlakyStore();
    const calls: string[] = [];
    const handle = engineOver(store, calls).run(chain, { runId: 'run_away' });
    // Away from the first batch on (run-start), every call failing, for 400 ms.
    store.awayFor(400);
    const result = await handle.result;
    expect(result.status).toBe('completed');
    expect(store.failures).toBeGreaterThan(2);
    expect(calls).toEqual(['first', 'second']);
    await expectWholeJournal(store, 'run_away');
  });

  it('gives up with E501 once the lease ran out, instead of waiting for a store that stays away', async () => {
    const store = new FlakyStore();
    const calls: string[] = [];
    const started = Date.now();
    const handle = engineOver(store, calls, 300).run(chain, { runId: 'run_gone' });
    store.awayFor(60_000);
    await expect(handle.result).rejects.toMatchObject({ code: ErrorCodes.LEASE_CONFLICT });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(calls).toEqual([]);
  });

  it('fails at once on an error that is not transient', async () => {
    const store = new FlakyStore();
    const calls: string[] = [];
    const refused = new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'disk full', { retryable: false });
    store.append = () => Promise.reject(refused);
    const handle = engineOver(store, calls).run(chain, { runId: 'run_refused' });
    await expect(handle.result).rejects.toBe(refused);
    expect(calls).toEqual([]);
  });
});

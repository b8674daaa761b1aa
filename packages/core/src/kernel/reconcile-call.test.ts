import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import { MemoryStore } from '../store/memory-store.js';
import { type CrashPoint, crashThenResume as crashOn } from '../testing/conformance-reconcile.js';
import { eventsOfType } from '../testing/fixtures.js';
import type { Reconciliation } from '../tools/define-tool.js';

// Done, not done and unknown are store conformance cases (testing/conformance-reconcile.ts), run
// under every store; what is left here does not depend on the store.
const crashThenResume = (crash: CrashPoint, answer?: () => Reconciliation<{ receipt: string }>) => {
  const store = new MemoryStore();
  return crashOn({ first: store, second: store }, crash, answer);
};

describe('reconcile: a non-idempotent call whose outcome a crash left unknown', () => {
  it('fails the step as interrupted (E309) when reconcile throws, and does not run it again', async () => {
    const thrown = await crashThenResume('after-effect', () => {
      throw new Error('connection refused');
    });
    expect(thrown.result.steps[0]?.error).toMatchObject({ code: ErrorCodes.STEP_INTERRUPTED });
    expect(thrown.result.steps[0]?.error?.message).toContain('connection refused');
    expect(thrown.second.executed).toEqual([]);
  });

  it('fails the step E305 when the output reconcile gives does not match the tool’s output schema', async () => {
    const { result, events } = await crashThenResume('after-effect', () => ({
      status: 'done',
      output: { receipt: 7 } as unknown as { receipt: string },
    }));
    expect(result.steps[0]?.error).toMatchObject({ code: ErrorCodes.TOOL_OUTPUT_INVALID });
    expect(eventsOfType(events, 'tool-result')[0]).toMatchObject({ status: 'failed', reconciled: true });
  });
});

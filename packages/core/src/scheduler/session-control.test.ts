import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { SessionControl } from './session-control.js';

/** A promise the test settles by hand. */
function deferred() {
  let resolve: () => void = () => undefined;
  let reject: (error: unknown) => void = () => undefined;
  const promise = new Promise<void>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

const flushed = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('SessionControl', () => {
  it('keeps the first stop and aborts the signal with E307 carrying its reason', () => {
    const control = new SessionControl();
    expect(control.stopped).toBe(false);
    expect(control.signal.aborted).toBe(false);
    control.stop('waiting', 'step "a" waits for a person');
    control.stop('cancelled', 'too late');
    expect(control.stopCause).toEqual({ kind: 'waiting', reason: 'step "a" waits for a person' });
    expect(control.signal.aborted).toBe(true);
    const reason = control.signal.reason as StepwiseError;
    expect(StepwiseError.isInstance(reason)).toBe(true);
    expect(reason.code).toBe(ErrorCodes.STEP_CANCELLED);
    expect(reason.message).toContain('step "a" waits for a person');
  });

  it('turns a journal failure into a failed stop and keeps the first error for the result', () => {
    const control = new SessionControl();
    const first = new Error('disk full');
    control.journalFailed(first);
    control.journalFailed(new Error('second'));
    expect(control.fatal?.error).toBe(first);
    expect(control.stopCause).toEqual({ kind: 'failed', reason: 'the journal failed: disk full' });
  });

  it('stops on a journal failure whose error has no text (a store threw an object without a prototype)', () => {
    const control = new SessionControl();
    const hostile = Object.create(null) as object;
    control.journalFailed(hostile);
    expect(control.fatal?.error).toBe(hostile);
    expect(control.stopCause).toEqual({
      kind: 'failed',
      reason: 'the journal failed: (a thrown object that cannot be shown as text)',
    });
    expect(control.signal.aborted).toBe(true);
  });

  it('holds without stopping: the signal stays live for the steps in flight', () => {
    const control = new SessionControl();
    control.hold('revision 2 is not approved');
    control.hold('revision 3 is not approved');
    expect(control.held).toBe(true);
    expect(control.stopped).toBe(false);
    expect(control.signal.aborted).toBe(false);
  });

  it('is idle only once every piece of work has settled, whatever order they settle in', async () => {
    const control = new SessionControl();
    let idle = false;
    void control.idle.then(() => {
      idle = true;
    });
    const first = deferred();
    const second = deferred();
    control.beginWork();
    control.track(first.promise);
    control.track(second.promise);
    control.endWork();
    await flushed();
    expect(idle).toBe(false);
    second.resolve();
    await flushed();
    expect(idle).toBe(false);
    expect(control.ended).toBe(false);
    first.resolve();
    await flushed();
    expect(idle).toBe(true);
    expect(control.ended).toBe(true);
    expect(control.stopped).toBe(false);
  });

  it('treats tracked work that rejects as a journal failure, and is still idle after it', async () => {
    const control = new SessionControl();
    const work = deferred();
    const refused = new Error('append refused');
    control.track(work.promise);
    work.reject(refused);
    await control.idle;
    expect(control.fatal?.error).toBe(refused);
    expect(control.stopCause?.kind).toBe('failed');
    expect(control.signal.aborted).toBe(true);
  });

  it('resolves begun when the session has placed its steps', async () => {
    const control = new SessionControl();
    let begun = false;
    void control.begun.then(() => {
      begun = true;
    });
    await flushed();
    expect(begun).toBe(false);
    control.markBegun();
    await flushed();
    expect(begun).toBe(true);
  });
});

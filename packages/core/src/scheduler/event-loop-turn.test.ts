import { describe, expect, it, vi } from 'vitest';
import { nextTurn } from './event-loop-turn.js';

/** Keeps the thread for `ms` of the real clock, as a run of steps that never wait does. */
function keepThread(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy on purpose
  }
}

describe('nextTurn', () => {
  it('runs the timers that came due at every turn, not one turn in two', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 2);
    // Each stretch outlasts the interval, so a turn that reaches the timers phase always ticks.
    for (let turn = 0; turn < 30; turn++) {
      keepThread(4);
      await nextTurn();
    }
    clearInterval(timer);
    expect(ticks).toBeGreaterThanOrEqual(30);
  });

  it('wakes every caller waiting for the same turn', async () => {
    const woken: number[] = [];
    await Promise.all([1, 2, 3].map((caller) => nextTurn().then(() => woken.push(caller))));
    expect(woken).toEqual([1, 2, 3]);
  });

  it('comes even while the host fakes timers', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'setImmediate'] });
    try {
      await nextTurn();
    } finally {
      vi.useRealTimers();
    }
  });
});

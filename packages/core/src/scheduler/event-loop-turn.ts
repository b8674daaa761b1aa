import { MessageChannel } from 'node:worker_threads';

/**
 * How long a run may keep the thread busy before it lets timers and I/O have a turn. Steps whose
 * tools return at once, on a synchronous store (better-sqlite3), chain through promise callbacks
 * only: without a turn, nothing else runs until the run ends — the lease renewal timer included,
 * so a long run's lease could lapse while it was working, and a host's progress display froze.
 */
export const TURN_EVERY_MS = 10;

let waiters: (() => void)[] = [];

/**
 * Resolves on a later turn of the event loop, after the timers and I/O that were due. A message
 * port, not `setImmediate`: hosts' tests fake timers (and `setImmediate` with them), and a run
 * must not wait for a fake clock. A new channel for each turn: libuv delivers, in one pass, the
 * messages of every port it already knew of, those posted meanwhile included, so a message posted
 * to a reused port while another port delivered came back before the timers had run (one turn in
 * two gave them nothing); a new port's first message waits for the loop's next pass.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    if (waiters.push(resolve) > 1) return;
    // Ref'd while it listens: a run waiting for its turn keeps the process alive; closed after.
    const { port1, port2 } = new MessageChannel();
    port1.once('message', () => {
      port1.close();
      const due = waiters;
      waiters = [];
      for (const wake of due) wake();
    });
    port2.postMessage(null);
  });
}

import { MessageChannel, type MessagePort } from 'node:worker_threads';

/**
 * How long a run may keep the thread busy before it lets timers and I/O have a turn. Steps whose
 * tools return at once, on a synchronous store (better-sqlite3), chain through promise callbacks
 * only: without a turn, nothing else runs until the run ends — the lease renewal timer included,
 * so a long run's lease could lapse while it was working, and a host's progress display froze.
 */
export const TURN_EVERY_MS = 10;

interface Channel {
  /** Hears the message; ref'd only while someone waits, so an idle process can exit. */
  readonly listen: MessagePort;
  readonly send: MessagePort;
}
/**
 * Two channels, used in turn: Node delivers a port's messages in one go, those posted while it
 * delivers included, so a run that posted its next message to the same port from inside the
 * callback would never give the loop back.
 */
let channels: readonly [Channel, Channel] | undefined;
let next = 0;
const waiters: (() => void)[] = [];

/**
 * Resolves on a later turn of the event loop, after the timers and I/O that were due. A message
 * port, not `setImmediate`: hosts' tests fake timers (and `setImmediate` with them), and a run
 * must not wait for a fake clock.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    if (waiters.push(resolve) > 1) return;
    channels ??= [openChannel(), openChannel()];
    const channel = channels[next] as Channel;
    next = 1 - next;
    channel.listen.ref();
    channel.send.postMessage(null);
  });
}

function openChannel(): Channel {
  const { port1, port2 } = new MessageChannel();
  port1.on('message', () => {
    port1.unref();
    for (const resolve of waiters.splice(0)) resolve();
  });
  port1.unref();
  port2.unref();
  return { listen: port1, send: port2 };
}

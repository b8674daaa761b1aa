/** A signal that aborts with its parent or after a timeout, whichever comes first. */
export interface TimedSignal {
  readonly signal: AbortSignal;
  /** True once the timeout, not the parent, aborted `signal`. */
  readonly timedOut: boolean;
  /** Clears the timer and stops following the parent: call it once the guarded work settled. */
  dispose(): void;
}

const nothingToDispose = () => undefined;

/**
 * `parent` plus a timeout: the signal aborts with the parent's reason when the parent aborts (at
 * once if it already has), or with `timeoutReason()` after `timeoutMs`. Without a timeout the
 * parent itself is handed back: no controller, no listener. The timer is a `setTimeout`, not
 * `AbortSignal.timeout`, so fake timers in tests control it.
 */
export function signalWithTimeout(
  parent: AbortSignal,
  timeoutMs: number | undefined,
  timeoutReason: () => unknown,
): TimedSignal {
  if (timeoutMs === undefined) return { signal: parent, timedOut: false, dispose: nothingToDispose };
  const controller = new AbortController();
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, timedOut: false, dispose: nothingToDispose };
  }
  // A data property the timer sets, not a `get` in the literal: a getter closure per call would sit
  // in an accessor pair in the old generation and keep the call (and its run) alive through scavenges.
  const guard: { signal: AbortSignal; timedOut: boolean; dispose(): void } = {
    signal: controller.signal,
    timedOut: false,
    dispose() {
      clearTimeout(timer);
      parent.removeEventListener('abort', onAbort);
    },
  };
  const timer = setTimeout(() => {
    guard.timedOut = true;
    parent.removeEventListener('abort', onAbort);
    controller.abort(timeoutReason());
  }, timeoutMs);
  const onAbort = () => {
    clearTimeout(timer);
    controller.abort(parent.reason);
  };
  parent.addEventListener('abort', onAbort, { once: true });
  return guard;
}

import type { StepError } from '../errors.js';
import type { RetryPolicy } from './plan-schema.js';

/** Three attempts, waiting 1 s then 2 s between them (doubling from one second). */
export const DEFAULT_RETRY: Required<Omit<RetryPolicy, 'on'>> = {
  maxAttempts: 3,
  initialDelayMs: 1000,
  factor: 2,
  maxDelayMs: 30_000,
  jitter: 0.2,
};

/**
 * Delay before attempt `attempt + 1`, after attempt `attempt` failed (attempts count from 1).
 * `random` is injectable so tests and replays are deterministic.
 */
export function backoffDelay(
  policy: Partial<RetryPolicy> | undefined,
  attempt: number,
  random: () => number = Math.random,
): number {
  const initial = policy?.initialDelayMs ?? DEFAULT_RETRY.initialDelayMs;
  const factor = policy?.factor ?? DEFAULT_RETRY.factor;
  const max = policy?.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs;
  const jitter = policy?.jitter ?? DEFAULT_RETRY.jitter;
  const base = Math.min(initial * factor ** (attempt - 1), max);
  const spread = base * jitter * (random() * 2 - 1);
  return Math.max(0, Math.round(base + spread));
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Whether a failed attempt may be retried: the tool marked the error retryable, or the policy lists its code in `on`. */
export function isRetryable(error: StepError | undefined, policy: Partial<RetryPolicy> | undefined): boolean {
  if (!error) return false;
  return error.retryable || (policy?.on?.includes(error.code) ?? false);
}

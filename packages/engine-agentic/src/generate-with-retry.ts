import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { backoffDelay, signalWithTimeout, sleep } from '@stepwise/core/engine';
import type { ChatModel, ChatRequest, ChatResponse } from './chat-model.js';
import { ModelError, toModelError } from './model-error.js';

/** Backoff for transient model errors. The defaults: 3 retries, 1 s, 2 s, 4 s, with jitter. */
export interface ModelRetryOptions {
  /** Retries after the first call. Default 3 (so at most 4 calls). */
  readonly retries?: number;
  /** Delay before the first retry. Default 1000 ms. */
  readonly initialDelayMs?: number;
  /** Growth per retry. Default 2. */
  readonly factor?: number;
  /** Cap of the computed delay. Default 30 000 ms. */
  readonly maxDelayMs?: number;
  /** Fraction of the delay drawn at random, ± (0 = none). Default 0.2. */
  readonly jitter?: number;
  /** A Retry-After longer than this is not waited for: the call fails instead. Default 60 000 ms. */
  readonly maxRetryAfterMs?: number;
}

export const DEFAULT_MODEL_RETRY: Required<ModelRetryOptions> = {
  retries: 3,
  initialDelayMs: 1000,
  factor: 2,
  maxDelayMs: 30_000,
  jitter: 0.2,
  maxRetryAfterMs: 60_000,
};

export interface GenerateOptions {
  readonly retry: Required<ModelRetryOptions>;
  /** Cancels the call and any wait between retries. */
  readonly signal: AbortSignal;
  /** Per call; a call that takes longer is aborted and counts as a transient failure. */
  readonly timeoutMs: number | undefined;
  readonly random: () => number;
  /** Told about every failed call before the engine waits or gives up (the engine journals it). */
  readonly onFailure: (failure: {
    readonly error: ModelError;
    readonly call: number;
    readonly latencyMs: number;
    /** Set when another call follows after this delay. */
    readonly retryInMs: number | undefined;
  }) => Promise<void>;
}

async function generateOnce(
  model: ChatModel,
  request: Omit<ChatRequest, 'signal'>,
  signal: AbortSignal,
  timeoutMs: number | undefined,
): Promise<ChatResponse> {
  const guard = signalWithTimeout(
    signal,
    timeoutMs,
    () => new ModelError(`the model did not answer within ${timeoutMs} ms`, { retryable: true }),
  );
  const callSignal = guard.signal;
  let rejectWithReason: (() => void) | undefined;
  try {
    // A model that ignores its signal must not hold the step: the abort settles the race.
    const aborted = new Promise<never>((_, reject) => {
      rejectWithReason = () => reject(callSignal.reason);
      if (callSignal.aborted) rejectWithReason();
      else callSignal.addEventListener('abort', rejectWithReason, { once: true });
    });
    aborted.catch(() => undefined);
    return await Promise.race([model.generate({ ...request, signal: callSignal }), aborted]);
  } catch (error) {
    if (guard.timedOut && !signal.aborted) {
      throw new ModelError(`the model did not answer within ${timeoutMs} ms`, { retryable: true, cause: error });
    }
    throw error;
  } finally {
    // Without a timeout `callSignal` is the step's own signal, which outlives this call.
    if (rejectWithReason) callSignal.removeEventListener('abort', rejectWithReason);
    guard.dispose();
  }
}

/**
 * Calls the model; transient failures (network, 408/429/5xx, timeouts) are retried with exponential
 * backoff and jitter, waiting at least as long as the endpoint's Retry-After. Throws the last
 * ModelError (E407) when retries run out or the error is not transient, and the signal's reason
 * when cancelled.
 */
export async function generateWithRetry(
  model: ChatModel,
  request: Omit<ChatRequest, 'signal'>,
  options: GenerateOptions,
): Promise<{ readonly response: ChatResponse; readonly latencyMs: number }> {
  const { retry, signal } = options;
  for (let call = 1; ; call++) {
    if (signal.aborted) throw signal.reason;
    const started = performance.now();
    try {
      const response = await generateOnce(model, request, signal, options.timeoutMs);
      return { response, latencyMs: performance.now() - started };
    } catch (thrown) {
      if (signal.aborted) throw signal.reason;
      const error = toModelError(thrown);
      const latencyMs = performance.now() - started;
      const backoff = backoffDelay(
        {
          initialDelayMs: retry.initialDelayMs,
          factor: retry.factor,
          maxDelayMs: retry.maxDelayMs,
          jitter: retry.jitter,
        },
        call,
        options.random,
      );
      const delay = error.retryAfterMs === undefined ? backoff : Math.max(error.retryAfterMs, backoff);
      const retryable =
        error.retryable &&
        call <= retry.retries &&
        (error.retryAfterMs === undefined || error.retryAfterMs <= retry.maxRetryAfterMs);
      await options.onFailure({ error, call, latencyMs, retryInMs: retryable ? delay : undefined });
      if (!retryable) {
        if (!error.retryable) throw error;
        throw new ModelError(`${error.message} (gave up after ${call} call${call === 1 ? '' : 's'})`, {
          retryable: false,
          ...(error.status === undefined ? {} : { status: error.status }),
          details: { calls: call },
          cause: error,
        });
      }
      await sleep(delay, signal);
    }
  }
}

/** True for the reason a step's signal carries when its own timeout fired. */
export function isTimeoutReason(reason: unknown): boolean {
  return StepwiseError.isInstance(reason) && reason.code === ErrorCodes.STEP_TIMEOUT;
}

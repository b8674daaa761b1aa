import { ErrorCodes, StepwiseError } from '@stepwise/core';

export interface ModelErrorOptions {
  /** Transient: the same request may succeed later (network, 408, 429, 5xx, timeouts). */
  readonly retryable?: boolean;
  /** HTTP status, when there was a response. */
  readonly status?: number;
  /** How long the endpoint asked us to wait (Retry-After), in milliseconds. */
  readonly retryAfterMs?: number;
  readonly details?: Record<string, unknown>;
  readonly cause?: unknown;
}

/** A failed model call (code E407). The engine retries it with backoff when `retryable`. */
export class ModelError extends StepwiseError {
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options: ModelErrorOptions = {}) {
    const details = {
      ...options.details,
      ...(options.status === undefined ? {} : { status: options.status }),
      ...(options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs }),
    };
    super(ErrorCodes.MODEL_ERROR, message, {
      retryable: options.retryable ?? false,
      ...(Object.keys(details).length > 0 ? { details } : {}),
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
    this.name = 'ModelError';
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** HTTP statuses worth another try: timeouts, conflicts, rate limits and server errors. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}

/**
 * `Retry-After` (seconds or an HTTP date) or OpenAI's `retry-after-ms`, in milliseconds.
 * `now` is injectable so tests with fake clocks agree with the parser.
 */
export function parseRetryAfter(
  headers: { get(name: string): string | null } | Record<string, string | undefined> | undefined,
  now: number = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const read = (name: string): string | null | undefined =>
    typeof (headers as { get?: unknown }).get === 'function'
      ? (headers as { get(name: string): string | null }).get(name)
      : ((headers as Record<string, string | undefined>)[name] ??
        (headers as Record<string, string | undefined>)[name.toLowerCase()]);
  const milliseconds = read('retry-after-ms');
  if (milliseconds && /^\d+(\.\d+)?$/.test(milliseconds.trim())) return Math.ceil(Number(milliseconds));
  const value = read('retry-after');
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

function isAbortLike(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

/**
 * Turns anything a model threw into a ModelError. StepwiseErrors keep their retryability; network
 * failures (`fetch failed`, socket resets) are transient; anything else is not.
 */
export function toModelError(error: unknown): ModelError {
  if (error instanceof ModelError) return error;
  if (StepwiseError.isInstance(error)) {
    return new ModelError(error.message, {
      retryable: error.retryable,
      ...(error.details ? { details: error.details } : {}),
      cause: error,
    });
  }
  if (isAbortLike(error)) return new ModelError('the model call was aborted', { retryable: true, cause: error });
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code ?? (error.cause as { code?: unknown } | undefined)?.code;
    const network =
      (error instanceof TypeError && /fetch failed|network|socket/i.test(error.message)) ||
      (typeof code === 'string' && /^(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|UND_ERR)/.test(code));
    return new ModelError(`model call failed: ${error.message}`, { retryable: network, cause: error });
  }
  return new ModelError(`model call failed: ${String(error)}`, { retryable: false });
}

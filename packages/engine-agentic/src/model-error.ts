import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';

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

/** Why a model endpoint could not be used, as `details.reason` of a ModelError. */
export type ModelFailureReason =
  | 'connection-refused'
  | 'dns'
  | 'tls'
  | 'timeout'
  | 'network'
  | 'unauthorized'
  | 'model-not-found'
  | 'endpoint-not-found'
  | 'tools-unsupported'
  | 'invalid-response'
  | 'url-refused'
  | 'http';

interface NetworkFailure {
  readonly reason: ModelFailureReason;
  readonly retryable: boolean;
  readonly code: string | undefined;
  readonly explanation: string;
}

function errorCode(error: unknown): string | undefined {
  // undici wraps the socket error: TypeError('fetch failed', { cause: Error{ code } }), sometimes twice.
  for (let current = error, depth = 0; current instanceof Error && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = current.cause;
  }
  return undefined;
}

/**
 * A request fetch refused to send: a port it blocks for safety (undici's "bad port": 6000,
 * 6665–6669 and others) or a URL scheme it cannot fetch. Configuration, so no retry can help.
 */
function fetchRefusal(error: unknown): NetworkFailure | undefined {
  if (!(error instanceof TypeError) || !(error.cause instanceof Error)) return undefined;
  const cause = error.cause.message;
  if (cause === 'bad port') {
    return {
      reason: 'url-refused',
      retryable: false,
      code: undefined,
      explanation:
        'fetch refuses this port ("bad port": it blocks ports such as 6000 and 6665–6669); serve the model on another port',
    };
  }
  if (cause === 'unknown scheme' || cause.startsWith('not implemented')) {
    return {
      reason: 'url-refused',
      retryable: false,
      code: undefined,
      explanation: `fetch cannot request this URL ("${cause}"); baseURL must start with http:// or https://`,
    };
  }
  return undefined;
}

const TLS_CODE = /^(ERR_TLS|ERR_SSL|EPROTO$|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ERR_OSSL)/;

/**
 * What a failed connection means and whether another try may help. A refused connection or an
 * unknown host fails at once (a server that is down or a mistyped URL does not come back within
 * a retry's seconds); resets, timeouts and temporary DNS failures are transient.
 */
export function classifyNetworkError(error: unknown): NetworkFailure | undefined {
  const refusal = fetchRefusal(error);
  if (refusal) return refusal;
  const code = errorCode(error);
  if (code === 'ECONNREFUSED') {
    return {
      reason: 'connection-refused',
      retryable: false,
      code,
      explanation: 'connection refused; is the server running?',
    };
  }
  if (code === 'ENOTFOUND') return { reason: 'dns', retryable: false, code, explanation: 'host name not found' };
  if (code === 'EAI_AGAIN')
    return { reason: 'dns', retryable: true, code, explanation: 'host name lookup failed for now' };
  if (code && TLS_CODE.test(code)) {
    // OpenSSL's own messages run to a source path; a short one (a certificate problem) is kept.
    const detail = error instanceof Error && error.cause instanceof Error ? error.cause.message : '';
    const explanation =
      detail && detail.length <= 80 ? `TLS failed: ${detail}` : 'TLS failed; does the server speak https?';
    return { reason: 'tls', retryable: false, code, explanation };
  }
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') {
    return { reason: 'timeout', retryable: true, code, explanation: 'the connection timed out' };
  }
  if (
    (code && /^(ECONNRESET|EPIPE|ENETUNREACH|EHOSTUNREACH|UND_ERR)/.test(code)) ||
    (error instanceof TypeError && /fetch failed|network|socket/i.test(error.message))
  ) {
    return {
      reason: 'network',
      retryable: true,
      code,
      explanation: code ? `network error (${code})` : 'network error',
    };
  }
  return undefined;
}

/** A URL fit for messages and journals: no credentials, no query (keys travel there too). */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    parsed.search = '';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** A fetch to `url` that did not get a response, as a ModelError naming the URL and the cause. */
export function connectionError(url: string, error: unknown): ModelError {
  if (error instanceof ModelError || isAbortLike(error)) return toModelError(error);
  const failure = classifyNetworkError(error);
  if (!failure) return toModelError(error);
  const code = failure.code && !failure.explanation.includes(failure.code) ? ` (${failure.code})` : '';
  return new ModelError(`cannot reach the model endpoint ${displayUrl(url)}: ${failure.explanation}${code}`, {
    retryable: failure.retryable,
    details: { url: displayUrl(url), reason: failure.reason, ...(failure.code ? { errorCode: failure.code } : {}) },
    cause: error,
  });
}

/**
 * Turns anything a model threw into a ModelError. StepwiseErrors keep their retryability; network
 * failures are classified by `classifyNetworkError`; anything else is not retryable.
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
    const failure = classifyNetworkError(error);
    return new ModelError(`model call failed: ${error.message}${failure ? ` (${failure.explanation})` : ''}`, {
      retryable: failure?.retryable ?? false,
      ...(failure ? { details: { reason: failure.reason } } : {}),
      cause: error,
    });
  }
  return new ModelError(`model call failed: ${messageOf(error)}`, { retryable: false });
}

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The cookie naming a browser's session with the dashboard (random, HttpOnly, SameSite=Strict). */
export const SESSION_COOKIE = 'stepwise_dashboard_session';
/** The header every action carries the session's anti-forgery token in. */
export const TOKEN_HEADER = 'x-stepwise-token';

function cookieOf(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

/** A session id as this guard issues them: 32 random bytes, base64url. */
function wellFormed(session: string | undefined): session is string {
  return session !== undefined && /^[A-Za-z0-9_-]{43}$/.test(session);
}

/** What a page needs: the session's token, and the cookie to set when the browser had no session. */
export interface SessionGrant {
  readonly token: string;
  readonly setCookie: string | undefined;
}

/**
 * Cross-site request forgery protection for actions, in two independent checks:
 * - the request comes from the dashboard's own origin (`Origin`, or `Sec-Fetch-Site: same-origin`
 *   when a browser sends no `Origin`); a request with neither is refused;
 * - it carries the token of its session: an HMAC of the session cookie under the dashboard's
 *   secret, which a page of another site can neither read nor compute.
 */
export class RequestGuard {
  readonly #secret: Uint8Array | string;
  readonly #cookiePath: string;
  readonly #allowedOrigins: ReadonlySet<string>;

  constructor(options: { secret?: string | Uint8Array; basePath: string; allowedOrigins: readonly string[] }) {
    this.#secret = options.secret ?? randomBytes(32);
    this.#cookiePath = options.basePath === '' ? '/' : options.basePath;
    this.#allowedOrigins = new Set(options.allowedOrigins);
  }

  #token(session: string): string {
    return createHmac('sha256', this.#secret).update(session).digest('base64url');
  }

  /** The session's token for a page, starting a session when the browser has none. */
  grant(request: Request): SessionGrant {
    const existing = cookieOf(request, SESSION_COOKIE);
    if (wellFormed(existing)) return { token: this.#token(existing), setCookie: undefined };
    const session = randomBytes(32).toString('base64url');
    const secure = new URL(request.url).protocol === 'https:' ? '; Secure' : '';
    return {
      token: this.#token(session),
      setCookie: `${SESSION_COOKIE}=${session}; Path=${this.#cookiePath}; HttpOnly; SameSite=Strict${secure}`,
    };
  }

  /** Whether the request comes from a page of the dashboard's origin (or an allowed one). */
  sameOrigin(request: Request): boolean {
    const origin = request.headers.get('origin');
    if (origin !== null) return origin === new URL(request.url).origin || this.#allowedOrigins.has(origin);
    return request.headers.get('sec-fetch-site') === 'same-origin';
  }

  /** Whether the request carries its session's token. */
  tokenMatches(request: Request): boolean {
    const session = cookieOf(request, SESSION_COOKIE);
    const token = request.headers.get(TOKEN_HEADER);
    if (!wellFormed(session) || token === null) return false;
    const expected = Buffer.from(this.#token(session));
    const given = Buffer.from(token);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

/** A fresh nonce for one page's script and style elements. */
export function newNonce(): string {
  return randomBytes(18).toString('base64');
}

/**
 * The page's Content-Security-Policy: scripts and stylesheets only with this response's nonce (no
 * inline handler, no `eval`, no style attribute), data only from the dashboard itself, no frames,
 * no forms, no base URL.
 */
export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

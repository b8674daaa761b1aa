import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { escapeHtml } from '../report/escape-html.js';
import { contentSecurityPolicy } from './request-guard.js';

/** Headers every response carries: nothing is cached, sniffed, framed or referred. */
const BASE_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...BASE_HEADERS, 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

/** A page, with the policy that lets only this response's nonce run scripts and load styles. */
export function htmlResponse(html: string, nonce: string, setCookie: string | undefined): Response {
  const headers = new Headers({
    ...BASE_HEADERS,
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': contentSecurityPolicy(nonce),
  });
  if (setCookie) headers.append('set-cookie', setCookie);
  return new Response(html, { status: 200, headers });
}

/** A script or stylesheet of the dashboard (no data in them, so they may be cached for a while). */
export function assetResponse(body: string, contentType: string): Response {
  return new Response(body, {
    status: 200,
    headers: { ...BASE_HEADERS, 'cache-control': 'private, max-age=300', 'content-type': contentType },
  });
}

export function redirectResponse(location: string): Response {
  return new Response(null, { status: 308, headers: { ...BASE_HEADERS, location } });
}

/** Which HTTP status a typed error answers with. */
function statusOf(code: string): number {
  switch (code) {
    case ErrorCodes.NOT_AUTHORIZED:
      return 403;
    case ErrorCodes.RUN_NOT_FOUND:
      return 404;
    case ErrorCodes.INPUT_INVALID:
    case ErrorCodes.ARGUMENTS_INVALID:
      return 400;
    case ErrorCodes.STORE_UNAVAILABLE:
      return 503;
    default:
      return 409;
  }
}

/** `{ error: { code, message, location } }` with the status the code calls for; anything untyped is a 500 without its text. */
export function errorResponse(error: unknown): Response {
  if (StepwiseError.isInstance(error)) {
    const { code, message, location } = error;
    return jsonResponse({ error: { code, message, ...(location === undefined ? {} : { location }) } }, statusOf(code));
  }
  return jsonResponse(
    { error: { code: 'internal', message: 'the dashboard failed to answer; see the server log' } },
    500,
  );
}

/** The same error as a small page, for a person who followed a link (a run that is not in the store). */
export async function errorPageResponse(error: unknown, basePath: string): Promise<Response> {
  const json = errorResponse(error);
  const { error: body } = (await json.json()) as { error: { code: string; message: string } };
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Stepwise · ${escapeHtml(body.code)}</title></head><body><p>${escapeHtml(`${body.code} ${body.message}`)}</p><p><a href="${escapeHtml(`${basePath}/`)}">All runs</a></p></body></html>`;
  return new Response(html, {
    status: json.status,
    headers: {
      ...BASE_HEADERS,
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': "default-src 'none'",
    },
  });
}

export function notFound(): Response {
  return new Response('not found', { status: 404, headers: { ...BASE_HEADERS, 'content-type': 'text/plain' } });
}

export function refused(message: string, location?: string): StepwiseError {
  return new StepwiseError(ErrorCodes.NOT_AUTHORIZED, message, location === undefined ? {} : { location });
}

/** What replaces a secret everywhere it would leave the kernel. */
export const REDACTED = '[REDACTED]';

/**
 * Token formats that are secrets wherever they appear. Each keeps a non-secret prefix
 * group (1) where there is one, so `Bearer [REDACTED]` still says what it was.
 */
const TOKEN_PATTERNS: readonly RegExp[] = [
  /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|$)/g,
  /\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b/g,
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{22,}\b/g,
  /\bglpat-[A-Za-z0-9_-]{20,}\b/g,
  /\bsk-(?:ant-|proj-|svcacct-|admin-|or-)?[A-Za-z0-9_-]{20,}\b/g,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  /\bnpm_[A-Za-z0-9]{36}\b/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /\b((?:Bearer|Basic|Token)\s+)[A-Za-z0-9._~+/=-]{8,}/gi,
  /((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|auth)[\w.-]*["']?\s*[:=]\s*["']?)(?!\[REDACTED\])[^\s"'&,;]{3,}/gi,
  /(\/\/[^/\s:@]+:)[^/\s@]{3,}(?=@)/g,
];

/** Keys whose string values are secrets whatever they look like. */
const SECRET_KEY =
  /passw(?:or)?d|secret|api[_-]?key|apikey|authorization|private[_-]?key|credential|cookie|(?:^|[_-]|[a-z])token$/i;

/** Values shorter than this are not treated as secrets: they would redact ordinary words. */
const MIN_SECRET_LENGTH = 6;

export interface RedactorOptions {
  /** Exact values that are secret (API keys from env, passwords). */
  readonly secrets?: Iterable<string>;
  /** Extra patterns; matches are replaced whole. Use the `g` flag. */
  readonly patterns?: Iterable<RegExp>;
  /** Names of environment variables whose values are secrets (read once, now). */
  readonly secretEnv?: Iterable<string>;
}

/** The one redaction pass used for events, the store, error messages and listeners. */
export interface Redactor {
  /** Returns `value` unchanged (same reference) when nothing is secret; a redacted copy otherwise. */
  redact<T>(value: T): T;
  redactText(text: string): string;
  /** Marks more values secret from now on. */
  addSecret(secret: string): void;
}

export function createRedactor(options: RedactorOptions = {}): Redactor {
  const secrets = new Set<string>();
  const patterns = [...TOKEN_PATTERNS, ...(options.patterns ?? [])];
  const addSecret = (secret: string): void => {
    if (secret.length >= MIN_SECRET_LENGTH) secrets.add(secret);
  };
  for (const secret of options.secrets ?? []) addSecret(secret);
  for (const name of options.secretEnv ?? []) {
    const value = process.env[name];
    if (value) addSecret(value);
  }

  // One case-insensitive alternation of every pattern: a cheap test that rules most strings out.
  const prefilter = new RegExp(patterns.map((pattern) => `(?:${pattern.source})`).join('|'), 'i');

  const redactText = (text: string): string => {
    if (text.length < MIN_SECRET_LENGTH) return text;
    let result = text;
    for (const secret of secrets) {
      if (result.includes(secret)) result = result.split(secret).join(REDACTED);
    }
    if (!prefilter.test(result)) return result;
    for (const pattern of patterns) {
      pattern.lastIndex = 0;
      if (!pattern.test(result)) continue;
      pattern.lastIndex = 0;
      // Group 1, where a pattern has one, is the non-secret prefix ("Bearer ", "password=").
      result = result.replace(pattern, (_match, prefix: unknown) =>
        typeof prefix === 'string' ? `${prefix}${REDACTED}` : REDACTED,
      );
    }
    return result;
  };

  // `path` holds the objects being visited (ancestors): a cycle is an object already on it.
  // Cheaper than a WeakSet per call, and events are shallow.
  const visit = (value: unknown, key: string | undefined, path: object[]): unknown => {
    if (typeof value === 'string') {
      if (key !== undefined && SECRET_KEY.test(key) && value.length > 0 && value !== REDACTED) return REDACTED;
      return redactText(value);
    }
    if (typeof value !== 'object' || value === null) return value;
    if (path.includes(value)) return value;
    if (Array.isArray(value)) {
      path.push(value);
      let copy: unknown[] | undefined;
      for (let index = 0; index < value.length; index++) {
        const next = visit(value[index], undefined, path);
        if (next !== value[index]) {
          copy ??= value.slice();
          copy[index] = next;
        }
      }
      path.pop();
      return copy ?? value;
    }
    if (value instanceof Error) {
      const message = redactText(value.message);
      if (message === value.message) return value;
      const copy = new Error(message);
      copy.name = value.name;
      return copy;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return value;
    path.push(value);
    let copy: Record<string, unknown> | undefined;
    for (const entryKey in value) {
      const entryValue = (value as Record<string, unknown>)[entryKey];
      const next = visit(entryValue, entryKey, path);
      if (next !== entryValue) {
        copy ??= { ...(value as Record<string, unknown>) };
        copy[entryKey] = next;
      }
    }
    path.pop();
    return copy ?? value;
  };

  return {
    redact: <T>(value: T): T => visit(value, undefined, []) as T,
    redactText,
    addSecret,
  };
}

/** Redacts with the built-in token formats only (no host secrets). */
export function redact<T>(value: T): T {
  defaultRedactor ??= createRedactor();
  return defaultRedactor.redact(value);
}
let defaultRedactor: Redactor | undefined;

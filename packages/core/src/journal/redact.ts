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

/** Encoded forms shorter than this are not searched for: they would match ordinary text. */
const MIN_ENCODED_LENGTH = 8;

/**
 * The stable middle of `bytes` in base64 when they start `offset` bytes (0–2) into a longer
 * encoded message: the first and last groups depend on the neighbouring bytes, the rest not.
 */
function base64Cores(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const shifted = Buffer.concat([Buffer.alloc(offset), bytes]);
    const encoded = shifted.toString('base64');
    const first = offset === 0 ? 0 : 4;
    // Only complete groups are stable; a secret that ends the message gets its padding form below.
    const last = Math.floor(shifted.length / 3) * 4;
    if (last - first >= MIN_ENCODED_LENGTH) cores.push(encoded.slice(first, last));
  }
  cores.push(bytes.toString('base64'), bytes.toString('base64').replace(/=+$/, ''));
  return cores;
}

/**
 * The forms a secret commonly takes in tool output and command stdout: itself (matched
 * case-insensitively, which covers upper and lower case), JSON-escaped, percent-encoded, hex
 * (either case), and base64 and base64url at every byte alignment.
 */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = new Set<string>([secret]);
  const add = (form: string) => {
    if (form.length >= MIN_ENCODED_LENGTH || form === secret) forms.add(form);
  };
  add(JSON.stringify(secret).slice(1, -1));
  add(encodeURIComponent(secret));
  add(encodeURI(secret));
  add(new URLSearchParams({ value: secret }).toString().slice('value='.length));
  add(bytes.toString('hex'));
  for (const core of base64Cores(bytes)) {
    add(core);
    add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...forms];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

type Visit = (value: unknown, key: string | undefined, path: object[]) => unknown;

/** The walk over a value that redacts every string, key, error and instance in it. */
function createVisitor(redactText: (text: string) => string): Visit {
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
    if (value instanceof Error) return visitError(value, path);
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return visitInstance(value, key, path);
    path.push(value);
    let copy: Record<string, unknown> | undefined;
    for (const entryKey in value) {
      const entryValue = (value as Record<string, unknown>)[entryKey];
      const next = visit(entryValue, entryKey, path);
      // Keys are journaled too: a secret used as a key is as visible as one used as a value.
      const nextKey = redactText(entryKey);
      if (next !== entryValue || nextKey !== entryKey) {
        copy ??= { ...(value as Record<string, unknown>) };
        if (nextKey !== entryKey) delete copy[entryKey];
        copy[nextKey] = next;
      }
    }
    path.pop();
    return copy ?? value;
  };

  const visitError = (value: Error, path: object[]): unknown => {
    const message = redactText(value.message);
    const details = (value as { details?: unknown }).details;
    const redactedDetails = details === undefined ? undefined : visit(details, 'details', path);
    if (message === value.message && redactedDetails === details) return value;
    const copy = new Error(message);
    copy.name = value.name;
    for (const field of ['code', 'location', 'retryable'] as const) {
      if (field in value)
        (copy as unknown as Record<string, unknown>)[field] = (value as unknown as Record<string, unknown>)[field];
    }
    if (details !== undefined) (copy as { details?: unknown }).details = redactedDetails;
    return copy;
  };

  /**
   * A class instance, URL, Buffer, Map…: what reaches the journal is its JSON form, so that is
   * what is checked. Unchanged values keep their identity; a redacted one is replaced by its
   * redacted JSON form (a Buffer by a Buffer of the redacted text).
   */
  const visitInstance = (value: object, key: string | undefined, path: object[]): unknown => {
    if (value instanceof Uint8Array) {
      const text = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('utf8');
      const redacted = visit(text, key, path);
      return redacted === text ? value : Buffer.from(redacted as string, 'utf8');
    }
    let serialized: unknown;
    try {
      serialized = JSON.parse(JSON.stringify(value) ?? 'null');
    } catch {
      // Not serialisable (a cycle, a BigInt): the journal cannot store it either.
      return value;
    }
    const redacted = visit(serialized, key, path);
    return redacted === serialized ? value : redacted;
  };

  return visit;
}

let defaultPrefilter: RegExp | undefined;

function compilePrefilter(patterns: readonly RegExp[]): RegExp {
  return new RegExp(patterns.map((pattern) => `(?:${pattern.source})`).join('|'), 'i');
}

export function createRedactor(options: RedactorOptions = {}): Redactor {
  const secrets = new Set<string>();
  const forms = new Set<string>();
  /** Every form of every secret, longest first, case-insensitive; undefined while there are none. */
  let secretPattern: RegExp | undefined;
  const patterns = [...TOKEN_PATTERNS, ...(options.patterns ?? [])];
  const addSecret = (secret: string): void => {
    if (secret.length < MIN_SECRET_LENGTH || secrets.has(secret)) return;
    secrets.add(secret);
    for (const form of secretForms(secret)) forms.add(form);
    const sorted = [...forms].sort((a, b) => b.length - a.length).map(escapeRegExp);
    secretPattern = new RegExp(sorted.join('|'), 'gi');
  };
  for (const secret of options.secrets ?? []) addSecret(secret);
  for (const name of options.secretEnv ?? []) {
    const value = process.env[name];
    if (value) addSecret(value);
  }

  // One case-insensitive alternation of every pattern: a cheap test that rules most strings out.
  // Compiled once for the built-in patterns (a journal, so every run, makes a redactor).
  if (options.patterns === undefined) defaultPrefilter ??= compilePrefilter(patterns);
  const prefilter = options.patterns === undefined ? (defaultPrefilter as RegExp) : compilePrefilter(patterns);

  const redactText = (text: string): string => {
    if (text.length < MIN_SECRET_LENGTH) return text;
    let result = text;
    if (secretPattern) {
      secretPattern.lastIndex = 0;
      if (secretPattern.test(result)) {
        secretPattern.lastIndex = 0;
        result = result.replace(secretPattern, REDACTED);
      }
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

  const visit = createVisitor(redactText);

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

import { createVisitor } from './redact-visitor.js';
import { redactDisguised, secretForms } from './secret-forms.js';

export { MAX_REDACTION_DEPTH } from './redact-visitor.js';
export { secretForms } from './secret-forms.js';

/**
 * What replaces a secret everywhere it would leave the kernel.
 * Shared with @stepwise/tools-node and @stepwise/tools-mcp; not part of the public API.
 * @internal
 */
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
  /((?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|auth)[\w.-]*["']?\s*[:=]\s*["']?)(?!\[REDACTED\])[^\s"'&,;]{3,}/gi,
  // `pwd` as a word or a name's last part (`PWD=` in a connection string, `db_pwd:`), but not the
  // working directory a shell exports as PWD and OLDPWD: a value that is a path is left alone.
  /((?<![A-Za-z0-9])(?:[\w.-]*[_.-])?pwd["']?\s*[:=]\s*["']?)(?!\[REDACTED\]|[/~]|[A-Za-z]:[\\/])[^\s"'&,;]{3,}/gi,
  /(\/\/[^/\s:@]+:)[^/\s@]{3,}(?=@)/g,
];

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

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
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
      // The same forms split over lines or percent-encoded byte by byte.
      result = redactDisguised(result, secretPattern, REDACTED);
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

  const visit = createVisitor(redactText, REDACTED);

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

import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { unifiedDiff } from './unified-diff.js';

/** Directories (separated like `PATH`) whose configuration and plugin files load without a recorded hash. */
export const TRUSTED_PATHS_VARIABLE = 'STEPWISE_TRUSTED_PATHS';

/** Where the trust store is and what it reads from the environment. */
export interface TrustOptions {
  /** The trust store file. Default `$XDG_CONFIG_HOME/stepwise/trusted.json`, else `~/.config/stepwise/trusted.json`. */
  readonly store?: string;
  /** Where `XDG_CONFIG_HOME`, `HOME` and `STEPWISE_TRUSTED_PATHS` are read. Default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Relative `STEPWISE_TRUSTED_PATHS` entries resolve here. Default `process.cwd()`. */
  readonly cwd?: string;
}

/** A file the command line would load and run on the host. */
export interface TrustCandidate {
  readonly path: string;
  readonly kind: 'config' | 'plugin';
  /** The configuration that names a plugin file. */
  readonly namedBy?: string;
  /** The contents the caller read and will use: hashed instead of reading the file again. */
  readonly bytes?: Buffer;
}

/** A file that may not be loaded: never trusted, or changed since it was. */
export interface UntrustedFile {
  /** Real absolute path (the trust store's key). */
  readonly path: string;
  readonly kind: TrustCandidate['kind'];
  readonly state: 'new' | 'changed';
  readonly sha256: string;
  readonly trustedSha256?: string;
  readonly trustedAt?: string;
  /** For a changed configuration whose trusted text was recorded: the unified diff from it. */
  readonly diff?: string;
  readonly namedBy?: string;
}

/** What `recordTrust` did with one file. */
export interface TrustRecord extends Omit<UntrustedFile, 'state'> {
  readonly state: UntrustedFile['state'] | 'unchanged';
}

interface TrustEntry {
  readonly sha256: string;
  readonly kind: TrustCandidate['kind'];
  readonly trustedAt: string;
  /** The trusted text of a configuration file (small text files only), to show what changed. */
  readonly contents?: string;
}

interface TrustStoreFile {
  readonly version: 1;
  readonly files: Record<string, TrustEntry>;
}

/** Configuration text up to this size is kept in the store so a refusal can show the diff. */
const MAX_RECORDED_CONTENTS = 64 * 1024;
/** Lines of a diff shown in a refusal. */
const MAX_DIFF_LINES = 60;

/**
 * Refusal to load a configuration or plugin file that is not trusted (E601, exit 2): every such
 * file, what changed, and the command that trusts them.
 */
export class UntrustedFileError extends StepwiseError {
  readonly files: readonly UntrustedFile[];

  constructor(files: readonly UntrustedFile[], store: string) {
    const config = files.find((file) => file.kind === 'config')?.path ?? files[0]?.namedBy;
    super(ErrorCodes.CONFIG_INVALID, untrustedMessage(files, config), {
      location: files[0]?.path ?? store,
      details: { reason: 'untrusted', store, files },
    });
    this.name = 'UntrustedFileError';
    this.files = files;
  }
}

function short(sha256: string | undefined): string {
  return sha256 ? `${sha256.slice(0, 12)}…` : 'none';
}

function describeUntrusted(file: UntrustedFile): string[] {
  const what = file.kind === 'config' ? 'configuration' : `plugin file named by ${file.namedBy ?? 'the configuration'}`;
  if (file.state === 'new') return [`  ${file.path}: ${what}, not trusted yet (sha256 ${short(file.sha256)})`];
  const lines = [
    `  ${file.path}: ${what}, changed since it was trusted on ${file.trustedAt} (sha256 ${short(file.trustedSha256)} → ${short(file.sha256)})`,
  ];
  if (file.diff) {
    const diff = file.diff.trimEnd().split('\n');
    lines.push(...diff.slice(0, MAX_DIFF_LINES).map((line) => `    ${line}`));
    if (diff.length > MAX_DIFF_LINES) lines.push(`    … ${diff.length - MAX_DIFF_LINES} more lines`);
  }
  return lines;
}

function untrustedMessage(files: readonly UntrustedFile[], config: string | undefined): string {
  return [
    `refusing to load ${files.length === 1 ? 'a file' : `${files.length} files`} that could run code on this machine and ${files.length === 1 ? 'is' : 'are'} not trusted:`,
    ...files.flatMap(describeUntrusted),
    `Read ${files.length === 1 ? 'it' : 'them'}; if ${files.length === 1 ? 'it is' : 'they are'} yours, trust ${files.length === 1 ? 'it' : 'them'} with: stepwise trust${config ? ` ${config}` : ''}`,
    `(CI: run "stepwise trust" right after the checkout, or list trusted directories in ${TRUSTED_PATHS_VARIABLE}.)`,
  ].join('\n');
}

/** `$XDG_CONFIG_HOME/stepwise/trusted.json`, else `~/.config/stepwise/trusted.json`. */
export function trustStorePath(options: TrustOptions = {}): string {
  if (options.store) return path.resolve(options.store);
  const env = options.env ?? process.env;
  const xdg = env.XDG_CONFIG_HOME;
  // The XDG spec ignores a relative XDG_CONFIG_HOME.
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'stepwise', 'trusted.json');
}

async function readStore(store: string): Promise<TrustStoreFile> {
  let text: string;
  try {
    text = await readFile(store, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, files: {} };
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `cannot read the trust store ${store}: ${(error as Error).message}`,
      {
        location: store,
        cause: error,
      },
    );
  }
  try {
    const parsed = JSON.parse(text) as TrustStoreFile;
    if (parsed?.version === 1 && typeof parsed.files === 'object' && parsed.files !== null) return parsed;
  } catch {
    // Reported below with what to do.
  }
  throw new StepwiseError(
    ErrorCodes.CONFIG_INVALID,
    `the trust store ${store} is not a Stepwise trust store (version 1 JSON); remove it and run stepwise trust again`,
    { location: store },
  );
}

async function writeStore(store: string, contents: TrustStoreFile): Promise<void> {
  await mkdir(path.dirname(store), { recursive: true, mode: 0o700 });
  const temporary = `${store}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(contents, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    await rename(temporary, store);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `cannot write the trust store ${store}: ${(error as Error).message}`,
      {
        location: store,
        cause: error,
      },
    );
  }
}

interface Fingerprint {
  readonly path: string;
  readonly sha256: string;
  readonly bytes: Buffer;
}

/** The file's real path, SHA-256 and bytes (`given`, else read), or undefined when it does not exist. */
async function fingerprint(file: string, given?: Buffer): Promise<Fingerprint | undefined> {
  let real: string;
  try {
    real = await realpath(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const bytes = given ?? (await readFile(real));
  return { path: real, sha256: createHash('sha256').update(bytes).digest('hex'), bytes };
}

function recordableText(bytes: Buffer): string | undefined {
  if (bytes.length > MAX_RECORDED_CONTENTS || bytes.includes(0)) return undefined;
  return bytes.toString('utf8');
}

/** Real directories listed in `STEPWISE_TRUSTED_PATHS`. */
async function trustedDirectories(options: TrustOptions): Promise<string[]> {
  const value = (options.env ?? process.env)[TRUSTED_PATHS_VARIABLE] ?? '';
  const entries = value.split(path.delimiter).filter((entry) => entry.trim() !== '');
  const resolved = await Promise.all(
    entries.map((entry) => realpath(path.resolve(options.cwd ?? process.cwd(), entry)).catch(() => undefined)),
  );
  return resolved.filter((entry): entry is string => entry !== undefined);
}

function isInside(directory: string, file: string): boolean {
  const relative = path.relative(directory, file);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function compare(candidate: TrustCandidate, print: Fingerprint, entry: TrustEntry | undefined): TrustRecord {
  const base = {
    path: print.path,
    kind: candidate.kind,
    sha256: print.sha256,
    ...(candidate.namedBy ? { namedBy: candidate.namedBy } : {}),
  };
  if (!entry) return { ...base, state: 'new' };
  if (entry.sha256 === print.sha256) return { ...base, state: 'unchanged' };
  const current = recordableText(print.bytes);
  const diff =
    entry.contents !== undefined && current !== undefined
      ? unifiedDiff(entry.contents, current, { path: path.basename(print.path) })
      : undefined;
  return {
    ...base,
    state: 'changed',
    trustedSha256: entry.sha256,
    trustedAt: entry.trustedAt,
    ...(diff ? { diff } : {}),
  };
}

async function compareAll(
  candidates: readonly TrustCandidate[],
  store: TrustStoreFile,
): Promise<{ record: TrustRecord; print: Fingerprint }[]> {
  const compared: { record: TrustRecord; print: Fingerprint }[] = [];
  for (const candidate of candidates) {
    // A missing plugin file fails to load on its own (E602); there is nothing to run.
    const print = await fingerprint(candidate.path, candidate.bytes);
    if (print) compared.push({ record: compare(candidate, print, store.files[print.path]), print });
  }
  return compared;
}

/**
 * Throws `UntrustedFileError` unless every existing candidate's bytes match the hash recorded by
 * `stepwise trust`, or it lies in a `STEPWISE_TRUSTED_PATHS` directory. Never writes the store.
 */
export async function checkTrust(candidates: readonly TrustCandidate[], options: TrustOptions = {}): Promise<void> {
  const store = trustStorePath(options);
  const directories = await trustedDirectories(options);
  const compared = await compareAll(candidates, await readStore(store));
  const untrusted = compared
    .map(({ record }) => record)
    .filter((record) => record.state !== 'unchanged')
    .filter((record) => !directories.some((directory) => isInside(directory, record.path)));
  if (untrusted.length > 0) throw new UntrustedFileError(untrusted as UntrustedFile[], store);
}

/** Records the current hash of every candidate (`stepwise trust`); says which were new or changed. */
export async function recordTrust(
  candidates: readonly TrustCandidate[],
  options: TrustOptions = {},
): Promise<{ readonly store: string; readonly records: readonly TrustRecord[] }> {
  const store = trustStorePath(options);
  const contents = await readStore(store);
  const missing = [];
  for (const candidate of candidates) if (!(await fingerprint(candidate.path))) missing.push(candidate.path);
  if (missing.length > 0) {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `cannot trust files that do not exist: ${missing.join(', ')}`, {
      location: missing[0] as string,
    });
  }
  const compared = await compareAll(candidates, contents);
  const files = { ...contents.files };
  const trustedAt = new Date().toISOString();
  for (const { record, print } of compared) {
    if (record.state === 'unchanged') continue;
    const text = record.kind === 'config' ? recordableText(print.bytes) : undefined;
    files[record.path] = {
      sha256: print.sha256,
      kind: record.kind,
      trustedAt,
      ...(text === undefined ? {} : { contents: text }),
    };
  }
  if (compared.some(({ record }) => record.state !== 'unchanged')) await writeStore(store, { version: 1, files });
  return { store, records: compared.map(({ record }) => record) };
}

import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { trustStorePath } from './trust-store.js';

/** Shorter key files are refused: core needs at least 16 bytes. */
const MINIMUM_KEY_LENGTH = 16;

/**
 * `$XDG_CONFIG_HOME/stepwise/journal.key`, else `~/.config/stepwise/journal.key`: beside the trust
 * store, outside every workspace, and hidden from sandboxed commands with the home directory.
 */
export function journalKeyPath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(path.dirname(trustStorePath({ env })), 'journal.key');
}

function keyFileError(file: string, problem: string, cause?: unknown): StepwiseError {
  return new StepwiseError(ErrorCodes.CONFIG_INVALID, `the journal key ${file} ${problem}`, {
    location: file,
    ...(cause === undefined ? {} : { cause }),
  });
}

async function readKey(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw keyFileError(file, `cannot be read: ${(error as Error).message}`, error);
  }
  const key = text.trim();
  if (key.length < MINIMUM_KEY_LENGTH) {
    throw keyFileError(
      file,
      `holds fewer than ${MINIMUM_KEY_LENGTH} characters; put the key back (runs journaled with it verify only with it), or remove the file for a new one`,
    );
  }
  return key;
}

/** Writes a new random key, unless another process wrote one first (then that one is used). */
async function createKey(file: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeFile(temporary, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    // A hard link never replaces a file: of two processes creating the key at once, one wins and
    // both read the winner's, complete, key.
    await link(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw keyFileError(file, `cannot be created: ${(error as Error).message}`, error);
    }
  } finally {
    await rm(temporary, { force: true });
  }
}

/**
 * The journal key of this user (see `journalKeyPath`), created on first use: 32 random bytes,
 * base64url, in a file only its owner may read. The CLI keys every run's hash chain with it, so a
 * command a plan runs — which cannot read the home directory — cannot forge a journal that verifies.
 */
export async function userJournalKey(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const file = journalKeyPath(env);
  const existing = await readKey(file);
  if (existing !== undefined) return existing;
  await createKey(file);
  const created = await readKey(file);
  if (created === undefined) throw keyFileError(file, 'disappeared while it was being created');
  return created;
}

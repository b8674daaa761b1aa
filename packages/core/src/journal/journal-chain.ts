import * as crypto from 'node:crypto';
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { canonicalJson } from '../plan/plan-digest.js';
import type { RunEvent } from './events.js';

/**
 * The secret that keys a journal's hash chain (HMAC-SHA-256): at least 16 bytes (a string counts
 * its UTF-8 bytes). Keep it where the commands a plan runs cannot read it — outside the workspace
 * and the store, as the CLI's `~/.config/stepwise/journal.key` is.
 */
export type JournalKey = string | Uint8Array;

/** How a run's chain values are computed; its `run-start` records it (`chainAlgorithm`). */
export type ChainAlgorithm = 'sha-256' | 'hmac-sha-256';

/** A chain value: the first 22 base64url characters (132 bits) of the digest. */
export const CHAIN_VALUE_LENGTH = 22;
const MINIMUM_KEY_BYTES = 16;

// `crypto.hash` (Node 20.12+) hashes in one call; older Node 20 releases fall back to a Hash object.
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64url') => string }).hash;

/** The key as node:crypto takes it; E601 (`journalKey`) when it is not a key of at least 16 bytes. */
export function journalKeyObject(key: JournalKey): KeyObject {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key instanceof Uint8Array ? key : undefined;
  if (!bytes || bytes.length < MINIMUM_KEY_BYTES) {
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `journalKey must be a string or bytes of at least ${MINIMUM_KEY_BYTES} bytes (got ${bytes ? `${bytes.length} bytes` : typeof key})`,
      { location: 'journalKey' },
    );
  }
  return createSecretKey(bytes);
}

/**
 * The chain value of `event` (which must not carry its own `chain`): a digest of the previous
 * event's chain value (the run id for the first event) and the event's canonical JSON — every
 * field, `runId`, `seq`, `at` and `type` included. SHA-256, or HMAC-SHA-256 with a key.
 */
export function chainValue(previous: string, event: object, key: KeyObject | undefined): string {
  const text = `${previous}\n${canonicalJson(event)}`;
  if (key) return createHmac('sha256', key).update(text).digest('base64url').slice(0, CHAIN_VALUE_LENGTH);
  const digest = oneShotHash
    ? oneShotHash('sha256', text, 'base64url')
    : crypto.createHash('sha256').update(text).digest('base64url');
  return digest.slice(0, CHAIN_VALUE_LENGTH);
}

/** The algorithm a key (or none) gives. */
export const chainAlgorithmOf = (key: KeyObject | undefined): ChainAlgorithm => (key ? 'hmac-sha-256' : 'sha-256');

/**
 * The writer's side of a run's chain, kept by `RunJournal`: stamps each event, in seq order, with
 * its chain value. A new run starts from its run id; a run reopened from a chained journal goes on
 * from the last stored value; a run journaled before chains existed (no last value) stays unchained.
 */
export class ChainWriter {
  readonly #key: KeyObject | undefined;
  #previous: string | undefined;

  constructor(runId: string, lastSeq: number, lastChain: string | undefined, key: KeyObject | undefined) {
    this.#key = key;
    this.#previous = lastSeq === 0 ? runId : lastChain;
  }

  /** False for a run journaled before chains existed: its events get no chain value. */
  get chained(): boolean {
    return this.#previous !== undefined;
  }

  /** The last value stamped (or the one the writer went on from). */
  get last(): string | undefined {
    return this.#previous;
  }

  /** Adds `chain` (and, to a run's first event, `chainAlgorithm`) to the event, in place. */
  stamp(event: RunEvent): void {
    const previous = this.#previous;
    if (previous === undefined) return;
    const record = event as unknown as Record<string, unknown>;
    // An event copied from a stored one (re-emitted) brings the old value: it is not part of the digest.
    if (record.chain !== undefined) delete record.chain;
    if (event.seq === 1) record.chainAlgorithm = chainAlgorithmOf(this.#key);
    const value = chainValue(previous, event, this.#key);
    record.chain = value;
    this.#previous = value;
  }
}

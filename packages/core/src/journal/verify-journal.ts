import type { KeyObject } from 'node:crypto';
import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunEvent } from './events.js';
import {
  CHAIN_VALUE_LENGTH,
  type ChainAlgorithm,
  chainValue,
  type JournalKey,
  journalKeyObject,
} from './journal-chain.js';
import { journalTamperedError } from './journal-tampered-error.js';
import { journalVersionOf } from './journal-version.js';

/**
 * How far a journal that verified can be trusted:
 * - `keyed`: every event matches a chain keyed with the journal key given;
 * - `unkeyed`: every event matches a chain without a key (no key was given): edits that did not
 *   recompute the chain are detected, edits by someone who recomputed it are not;
 * - `keyed-unverified`: the run was chained with a key and none was given: only the shape was checked;
 * - `unchained`: journaled before chains existed (format 1): nothing could be checked.
 */
export type JournalIntegrity = 'keyed' | 'unkeyed' | 'keyed-unverified' | 'unchained';

/** Why a journal was refused. */
export type JournalBreak =
  /** The event's chain value is not the one its content and the previous event give. */
  | 'mismatch'
  /** A chained journal holds an event without a chain value. */
  | 'missing'
  /** An unchained journal holds an event with a chain value. */
  | 'unexpected'
  /** Events are missing or out of order (a seq gap), or the first is not the run's first. */
  | 'sequence'
  /** A journal key was given and the run is chained without one. */
  | 'not-keyed'
  /** The first event names a chain algorithm this release does not know. */
  | 'algorithm';

export interface JournalIntact {
  readonly ok: true;
  readonly runId: string;
  /** Events checked, with those of `after`. */
  readonly events: number;
  readonly lastSeq: number;
  readonly integrity: JournalIntegrity;
  /** The last event's chain value (undefined when unchained). */
  readonly lastChain: string | undefined;
}

export interface JournalBroken {
  readonly ok: false;
  readonly runId: string;
  /** The first event that does not verify. */
  readonly seq: number;
  readonly eventType: string;
  readonly reason: JournalBreak;
  /** Whether it was checked with a journal key. */
  readonly keyed: boolean;
}

export type JournalVerification = JournalIntact | JournalBroken;

export interface VerifyJournalOptions {
  /** The key the run's chain was keyed with. Without it a keyed chain is `keyed-unverified`. */
  readonly journalKey?: JournalKey | undefined;
  /** The verification of the journal's events before these (a journal read in pages, a live stream). */
  readonly after?: JournalIntact;
}

const ALGORITHMS: ReadonlySet<unknown> = new Set<ChainAlgorithm>(['sha-256', 'hmac-sha-256']);
const CHAIN_SHAPE = new RegExp(`^[A-Za-z0-9_-]{${CHAIN_VALUE_LENGTH}}$`);

/** The integrity a journal's first event announces, or why it cannot be read. */
function integrityOf(first: RunEvent, key: KeyObject | undefined): JournalIntegrity | JournalBreak {
  const record = first as unknown as Record<string, unknown>;
  if (record.chain === undefined) {
    // Format 2 and later are always chained: a format-2 journal without values lost them.
    const version = journalVersionOf(record);
    return typeof version === 'number' && version >= 2 ? 'missing' : 'unchained';
  }
  const algorithm = record.chainAlgorithm;
  if (!ALGORITHMS.has(algorithm)) return 'algorithm';
  if (algorithm === 'sha-256') return key ? 'not-keyed' : 'unkeyed';
  return key ? 'keyed' : 'keyed-unverified';
}

/** Why `event` breaks the chain after `previous`, or its chain value when it does not. */
function checkLink(
  event: RunEvent,
  previous: string,
  integrity: JournalIntegrity,
  key: KeyObject | undefined,
): { value: string } | JournalBreak {
  const { chain, ...rest } = event as RunEvent & { chain?: unknown };
  if (chain === undefined) return 'missing';
  if (typeof chain !== 'string' || !CHAIN_SHAPE.test(chain)) return 'mismatch';
  if (integrity !== 'keyed-unverified' && chain !== chainValue(previous, rest, key)) return 'mismatch';
  return { value: chain };
}

/**
 * Checks a run's journal (its events in seq order, as a store returned them) against its hash
 * chain: the first event that does not verify, or how far the journal can be trusted. Journals
 * written before chains existed verify as `unchained`; with a `journalKey`, a chain computed
 * without one is refused (`not-keyed`): a forger without the key could have recomputed it.
 */
export function verifyJournal(
  runId: string,
  events: readonly RunEvent[],
  options: VerifyJournalOptions = {},
): JournalVerification {
  const key = options.journalKey === undefined ? undefined : journalKeyObject(options.journalKey);
  const after = options.after;
  let integrity: JournalIntegrity | undefined = after?.integrity;
  let previous = after ? (after.lastChain ?? runId) : runId;
  let lastSeq = after?.lastSeq ?? 0;
  const broken = (event: RunEvent, reason: JournalBreak): JournalBroken => ({
    ok: false,
    runId,
    seq: typeof event.seq === 'number' ? event.seq : lastSeq + 1,
    eventType: String(event.type),
    reason,
    keyed: key !== undefined,
  });
  for (const event of events) {
    if (event.seq !== lastSeq + 1) return broken(event, 'sequence');
    if (integrity === undefined) {
      const announced = integrityOf(event, key);
      if (isBreak(announced)) return broken(event, announced);
      integrity = announced;
    }
    if (integrity === 'unchained') {
      if ((event as { chain?: unknown }).chain !== undefined) return broken(event, 'unexpected');
    } else {
      const link = checkLink(event, previous, integrity, key);
      if (typeof link === 'string') return broken(event, link);
      previous = link.value;
    }
    lastSeq = event.seq;
  }
  return {
    ok: true,
    runId,
    events: (after?.events ?? 0) + events.length,
    lastSeq,
    integrity: integrity ?? 'unchained',
    lastChain: integrity === undefined || integrity === 'unchained' ? undefined : previous,
  };
}

const BREAKS: ReadonlySet<string> = new Set<JournalBreak>([
  'mismatch',
  'missing',
  'unexpected',
  'sequence',
  'not-keyed',
  'algorithm',
]);
const isBreak = (value: string): value is JournalBreak => BREAKS.has(value);

/** `verifyJournal`, throwing E507 (`journalTamperedError`) instead of returning a break. */
export function checkJournal(
  runId: string,
  events: readonly RunEvent[],
  options: VerifyJournalOptions = {},
): JournalIntact {
  const verification = verifyJournal(runId, events, options);
  if (!verification.ok) throw journalTamperedError(verification);
  return verification;
}

/**
 * Throws E601 when events cannot be added to a verified journal without breaking its chain: it is
 * keyed and no key was given (the writer's links would not verify with the key). Called by those
 * that reopen a run to journal more (resume, `respond`).
 */
export function checkLinkable(verification: JournalIntact): void {
  if (verification.integrity !== 'keyed-unverified') return;
  throw new StepwiseError(
    ErrorCodes.CONFIG_INVALID,
    `run ${verification.runId} is chained with a journal key (HMAC-SHA-256): give the engine (or respond) that journalKey to continue it`,
    { location: 'journalKey', details: { runId: verification.runId } },
  );
}

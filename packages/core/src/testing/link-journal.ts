import type { RunEvent } from '../journal/events.js';
import { ChainWriter, type JournalKey, journalKeyObject } from '../journal/journal-chain.js';

/**
 * Copies of a run's whole journal (from seq 1) with the chain values `RunJournal` stamps, computed
 * again: with `journalKey`, keyed. For a store's round-trip tests (a chained journal comes back as
 * it went in and still verifies), and for tests that play a forger who edits events and recomputes
 * the chain — without the key, which `verifyJournal` with the key must refuse.
 */
export function linkJournal(
  events: readonly RunEvent[],
  options: { readonly journalKey?: JournalKey } = {},
): RunEvent[] {
  const first = events[0];
  if (!first) return [];
  const key = options.journalKey === undefined ? undefined : journalKeyObject(options.journalKey);
  const writer = new ChainWriter(first.runId, 0, undefined, key);
  return events.map((event) => {
    const copy = structuredClone(event) as RunEvent & { chainAlgorithm?: unknown };
    delete copy.chainAlgorithm;
    writer.stamp(copy);
    return copy;
  });
}

/**
 * Runs a worker of this process just claimed for the first time, keyed by the store's connection:
 * no worker started them, so they have no journal and the engine's look at the run (`getRun`, right
 * before it starts the run) is answered from memory instead of by a round trip. Each hint answers
 * once. A run that has a journal anyway (started outside the queue under the same id) still comes
 * out right: the engine's first append expects an empty journal, is refused (E502), and the engine
 * looks again — by then the hint is spent, so it reads the journal and replays or resumes the run.
 * Internal to the package, so the store's public shape does not change.
 */
const hints = new WeakMap<object, Set<string>>();

/** The next `getRun(runId)` of the store of `connection` answers "no journal" without asking. */
export function expectNoJournal(connection: object, runId: string): void {
  let set = hints.get(connection);
  if (!set) {
    set = new Set();
    hints.set(connection, set);
  }
  set.add(runId);
}

/** True once after `expectNoJournal(connection, runId)`; removes the hint. */
export function takeNoJournalHint(connection: object, runId: string): boolean {
  return hints.get(connection)?.delete(runId) ?? false;
}

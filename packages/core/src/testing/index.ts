// @stepwise/core/testing: what host and store tests need, with no test runner imported, so it
// loads from ESM and CommonJS whether or not vitest is installed. The vitest-based store
// conformance suite is @stepwise/core/testing/vitest.
export { MemoryStore } from '../store/memory-store.js';
export {
  type CallLog,
  chainPlan,
  createCallLog,
  createTestTools,
  makePlan,
  randomDagPlan,
  seededRandom,
} from './fixtures.js';
export {
  type AppendedJournals,
  appendJournals,
  checkStoreAgainstFold,
  type FoldComparisonOptions,
  firstDifference,
  type StoreViewCheck,
} from './fold-comparison.js';
export { FreezableStore } from './freezable-store.js';
export { linkJournal } from './link-journal.js';
export { type GeneratedJournal, type RandomJournalOptions, randomJournals } from './random-journal.js';
export type {
  ExtensionEventContext,
  ExtensionEventGenerator,
  ExtensionEventInput,
} from './random-step-events.js';
export { type Draw, seededDraw } from './random-values.js';

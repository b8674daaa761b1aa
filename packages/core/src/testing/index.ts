export { MemoryStore } from '../memory-store.js';
export {
  type CallLog,
  chainPlan,
  createCallLog,
  createTestTools,
  makePlan,
  randomDagPlan,
  seededRandom,
} from './fixtures.js';
export { runStoreConformance, type StoreHarness } from './store-conformance.js';

// What both builds of @stepwise/core/testing export (the ESM one adds the vitest-based suite).
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

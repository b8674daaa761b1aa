export * from './common.js';
export { runStoreConformance, type StoreHarness } from './store-conformance.js';

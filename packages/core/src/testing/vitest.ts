// @stepwise/core/testing/vitest: the store conformance suite, written with vitest's describe/it.
// Its own entry, so @stepwise/core/testing never imports vitest (an optional peer).
export { runStoreConformance, type StoreHarness } from './store-conformance.js';

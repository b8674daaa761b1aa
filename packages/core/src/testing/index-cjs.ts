// The CommonJS build of @stepwise/core/testing: vitest cannot be require()d, so the conformance
// suite is ESM-only; everything else is the same as the ESM entry.
export * from './common.js';
export type { StoreHarness } from './store-conformance.js';

export function runStoreConformance(): never {
  throw new Error(
    'runStoreConformance is ESM-only (vitest cannot be require()d): import @stepwise/core/testing from an ESM test file',
  );
}

import { auditCases } from './conformance-audit.js';
import { cancelCases } from './conformance-cancel.js';
import { durabilityCases } from './conformance-durability.js';
import { fencingCases } from './conformance-fencing.js';
import { journalCases } from './conformance-journal.js';
import { leaseCases } from './conformance-leases.js';
import { liveOutputCases } from './conformance-live-output.js';
import { raceCases } from './conformance-races.js';
import { reconcileCases } from './conformance-reconcile.js';
import type { StoreHarness } from './conformance-support.js';

export type { StoreHarness } from './conformance-support.js';

/**
 * The contract every RunStore must meet. Call it from the store's own test file:
 * `runStoreConformance({ create: async () => createSqliteStore({ path }), reopen, connect })`.
 */
export function runStoreConformance(harness: StoreHarness): void {
  journalCases(harness);
  auditCases(harness);
  leaseCases(harness);
  raceCases(harness);
  durabilityCases(harness);
  fencingCases(harness);
  cancelCases(harness);
  liveOutputCases(harness);
  reconcileCases(harness);
}

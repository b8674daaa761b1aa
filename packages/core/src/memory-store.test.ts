import { MemoryStore } from './memory-store.js';
import { runStoreConformance } from './testing/store-conformance.js';

runStoreConformance({ create: async () => new MemoryStore() });

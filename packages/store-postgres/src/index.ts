export { createPostgresStore, type PostgresStore, type PostgresStoreOptions } from './create-postgres-store.js';
export { createWorker, type Worker, type WorkerOptions } from './create-worker.js';
export type {
  ApprovalsTable,
  BlobsTable,
  CancelRequestsTable,
  EventsTable,
  ExecutionsTable,
  LiveOutputTable,
  ModelCallsTable,
  PostgresStoreDatabase,
  RunsTable,
  StepsTable,
  StoreMetadataTable,
  ToolSlotsTable,
  WorkQueueTable,
} from './database-schema.js';
export { type EnqueuedRun, type EnqueueOptions, enqueue } from './enqueue.js';
export type { PostgresConnection, PostgresConnectionOptions } from './postgres-connection.js';
export { limitTools, type ToolLimitOptions } from './tool-limits.js';

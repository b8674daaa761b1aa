export {
  createSqliteStore,
  type SqliteStore,
} from './create-sqlite-store.js';
export type {
  ApprovalsTable,
  ArtifactsTable,
  BlobsTable,
  CancelRequestsTable,
  EventChunksTable,
  EventsTable,
  ExecutionsTable,
  LiveOutputTable,
  ModelCallsTable,
  RunsTable,
  StepsTable,
  StoreDatabase,
  StoredTime,
  StoreMetadataTable,
} from './database-schema.js';
export { SCHEMA_VERSION } from './schema-version.js';
export type { SqliteStoreOptions } from './sqlite-store-options.js';
export type { StepRecord } from './step-record.js';

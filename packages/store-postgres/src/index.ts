export { createPostgresStore, type PostgresStore, type PostgresStoreOptions } from './create-postgres-store.js';
export type {
  ApprovalsTable,
  BlobsTable,
  EventsTable,
  ExecutionsTable,
  ModelCallsTable,
  PostgresStoreDatabase,
  RunsTable,
  StepsTable,
  ToolSlotsTable,
  WorkQueueTable,
} from './database-schema.js';
export type { PostgresConnection, PostgresConnectionOptions } from './postgres-connection.js';

export {
  findPostgresBinaries,
  freePort,
  startThrowawayPostgres,
  type ThrowawayPostgres,
  type ThrowawayPostgresOptions,
} from './throwaway-postgres.js';

import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';
import { JOURNAL_VERSION } from '@stepwise/core/store';
import { Kysely, Migrator, PostgresDialect, type RawBuilder, sql } from 'kysely';
import pg from 'pg';
import type { PostgresStoreDatabase } from './database-schema.js';
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE, migrationProvider } from './migrations.js';

export interface PostgresConnectionOptions {
  /** `postgres://user:password@host:port/database`. One of `connectionString` and `pool` is required. */
  readonly connectionString?: string;
  /** The host application's pool; the store never ends it. */
  readonly pool?: pg.Pool;
  /** Postgres schema holding the tables. Default `stepwise`. */
  readonly schema?: string;
  /** Pool size when the store creates the pool from `connectionString`. Default 10. */
  readonly maxConnections?: number;
}

/** A pool, kysely over it, and the schema the tables live in. */
export interface PostgresConnection {
  readonly pool: pg.Pool;
  readonly db: Kysely<PostgresStoreDatabase>;
  readonly schema: string;
  /** `schema.name`, for raw SQL. */
  table(name: keyof PostgresStoreDatabase & string): RawBuilder<unknown>;
  /** Ends the pool when the connection created it. */
  close(): Promise<void>;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function openConnection(options: PostgresConnectionOptions): PostgresConnection {
  const schema = options.schema ?? 'stepwise';
  if (!SCHEMA_NAME.test(schema)) {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `schema "${schema}" is not a lower-case SQL identifier`, {
      location: 'schema',
    });
  }
  if (!options.pool && (typeof options.connectionString !== 'string' || options.connectionString === '')) {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'the Postgres store needs a connectionString or a pg.Pool', {
      location: 'connectionString',
    });
  }
  if (!options.pool) checkConnectionString(options.connectionString as string);
  const ownsPool = !options.pool;
  const pool =
    options.pool ?? new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 10 });
  // A client that loses its server (restart, network cut) must not crash the host process: pg emits
  // 'error' on idle clients (the pool's listener) and on checked-out ones between queries (the
  // client's own). The query in flight, or the next one, fails instead and becomes E503.
  if (ownsPool) {
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
  }
  const db = new Kysely<PostgresStoreDatabase>({ dialect: new PostgresDialect({ pool }) }).withSchema(schema);
  let closing: Promise<void> | undefined;
  return {
    pool,
    db,
    schema,
    table: (name) => sql.table(`${schema}.${name}`),
    close: () => {
      closing ??= ownsPool ? pool.end().catch(() => undefined) : Promise.resolve();
      return closing;
    },
  };
}

const POSTGRES_SCHEMES = new Set(['postgres:', 'postgresql:', 'socket:']);

/**
 * Refuses (E601) what `pg` would take for a host name and fail on later as E503 ENOTFOUND: text that
 * is not a URL, or a URL of another database. Accepted, as `pg` reads them: `postgres://` and
 * `postgresql://` URLs (an empty host with `?host=/socket/directory` included), `socket:` URLs, and a
 * socket directory path (`/var/run/postgresql`, optionally followed by a space and a database name).
 * The message never quotes the string: it may hold a password.
 */
export function checkConnectionString(connectionString: string): void {
  if (connectionString.startsWith('/')) return;
  // As pg does: spaces and stray `%` are encoded first, and a URL whose host is empty (`user@/db`) is
  // read with a stand-in host.
  const text = /[ ]|%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(connectionString)
    ? encodeURI(connectionString).replace(/%25(\d\d)/g, '%$1')
    : connectionString;
  const url = parseUrl(text) ?? parseUrl(text.replace('@/', '@stand-in-host/'));
  if (url && POSTGRES_SCHEMES.has(url.protocol)) return;
  const what = url ? 'is a URL of another kind' : 'is not a URL';
  throw new StepwiseError(
    ErrorCodes.CONFIG_INVALID,
    `connectionString ${what}: use postgres://user:password@host:port/database (or postgresql://, or a socket directory)`,
    { location: 'connectionString' },
  );
}

function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** Creates the schema and runs pending migrations; kysely's Migrator serialises concurrent processes with an advisory lock. */
export async function migrate(connection: PostgresConnection): Promise<void> {
  try {
    await sql`create schema if not exists ${sql.id(connection.schema)}`.execute(connection.db);
  } catch (error) {
    // Two processes creating the schema at once: the loser sees a unique violation; the schema exists.
    if ((error as { code?: string }).code !== '23505') throw error;
  }
  await refuseNewerSchema(connection);
  const migrator = new Migrator({
    db: connection.db,
    provider: migrationProvider(connection.schema),
    migrationTableSchema: connection.schema,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}

/** A schema migrated by a newer version of this package has migrations this one does not know: E504, untouched. */
async function refuseNewerSchema(connection: PostgresConnection): Promise<void> {
  const table = `${connection.schema}.${MIGRATION_TABLE}`;
  const exists = await sql<{ found: string | null }>`select to_regclass(${table})::text as found`.execute(
    connection.db,
  );
  if (!exists.rows[0]?.found) return;
  const rows = await sql<{ name: string }>`select name from ${sql.table(table)}`.execute(connection.db);
  const known = migrationProvider(connection.schema);
  const names = new Set(Object.keys(await known.getMigrations()));
  const unknown = rows.rows.map((row) => row.name).filter((name) => !names.has(name));
  if (unknown.length > 0) {
    throw new StepwiseError(
      ErrorCodes.STORE_SCHEMA_NEWER,
      `schema "${connection.schema}" was migrated by a newer @stepwise/store-postgres (${unknown.join(', ')}); upgrade this package`,
      { location: connection.schema },
    );
  }
  await refuseNewerJournals(connection);
}

/** A schema whose journals are in a format newer than this release's core folds: E504, untouched. */
async function refuseNewerJournals(connection: PostgresConnection): Promise<void> {
  const table = `${connection.schema}.store_metadata`;
  const exists = await sql<{ found: string | null }>`select to_regclass(${table})::text as found`.execute(
    connection.db,
  );
  if (!exists.rows[0]?.found) return;
  const query = sql<{ value: number }>`select value from ${sql.table(table)} where name = 'journal_version'`;
  const version = (await query.execute(connection.db)).rows[0]?.value;
  if (version === undefined || version <= JOURNAL_VERSION) return;
  throw new StepwiseError(
    ErrorCodes.STORE_SCHEMA_NEWER,
    `schema "${connection.schema}" holds journals in format version ${version}, newer than this release reads (${JOURNAL_VERSION}); upgrade @stepwise/core and @stepwise/store-postgres`,
    { location: connection.schema, details: { journalVersion: version, supportedJournalVersion: JOURNAL_VERSION } },
  );
}

/** pg error codes and socket errors after which trying again later can succeed. */
function isTransient(error: unknown): boolean {
  const code = String((error as { code?: unknown })?.code ?? '');
  const message = messageOf(error);
  return (
    code.startsWith('08') ||
    code.startsWith('57P') ||
    code === '53300' ||
    code === '40001' ||
    code === '40P01' ||
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND'].includes(code) ||
    /Connection terminated|connection timeout|Client has encountered a connection error|not queryable/i.test(message)
  );
}

/** Any failure talking to Postgres becomes E503 (retryable when the server may come back); StepwiseErrors pass through. */
export function storeError(error: unknown, what: string, location: string): StepwiseError {
  if (StepwiseError.isInstance(error)) return error;
  const message = messageOf(error);
  return new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, `Postgres store: ${what} failed (${message})`, {
    location,
    retryable: isTransient(error),
    cause: error,
  });
}

import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** A Postgres server in a temporary directory, for tests and benchmarks. */
export interface ThrowawayPostgres {
  /** `postgres://stepwise@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  /** The server's directory (data, `server.log`); deleted by `close`. */
  readonly directory: string;
  /** Stops the server (fast shutdown: open connections are cut) and keeps its data. */
  stop(): void;
  /** Starts it again on the same port and data. */
  start(): void;
  /** Stops the server and deletes its directory. */
  close(): void;
}

export interface ThrowawayPostgresOptions {
  /** Keep `fsync` on (benchmarks that compare durability). Default false: tests need no crash safety of the server itself. */
  readonly durable?: boolean;
  /** Extra `-c name=value` server settings. */
  readonly settings?: Readonly<Record<string, string>>;
}

/** Directories holding `initdb` and `pg_ctl`: `STEPWISE_POSTGRES_BIN`, then PATH, then Debian's /usr/lib/postgresql/<version>/bin. */
export function findPostgresBinaries(): string | undefined {
  const candidates = [
    process.env.STEPWISE_POSTGRES_BIN,
    ...(process.env.PATH ?? '').split(delimiter),
    ...debianBinaryDirectories(),
  ];
  return candidates.find(
    (directory): directory is string =>
      directory !== undefined &&
      directory !== '' &&
      existsSync(join(directory, 'initdb')) &&
      existsSync(join(directory, 'pg_ctl')),
  );
}

function debianBinaryDirectories(): string[] {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .sort((a, b) => Number(b) - Number(a))
    .map((version) => join(root, version, 'bin'));
}

/** initdb and postgres refuse to run as root: as root, run them as the `postgres` user (or `nobody`). */
function serverUser(): { readonly name: string; readonly uid: number; readonly gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
      return { name, uid, gid };
    } catch {
      // No such user: try the next.
    }
  }
  throw new Error('running as root and neither a "postgres" nor a "nobody" user exists to run the server as');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * Creates a cluster in a temporary directory with the machine's Postgres binaries and starts it on a
 * free port. Throws when no binaries are found or the server does not start (callers skip then).
 */
export async function startThrowawayPostgres(options: ThrowawayPostgresOptions = {}): Promise<ThrowawayPostgres> {
  const binaries = findPostgresBinaries();
  if (!binaries) throw new Error('no Postgres binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin');
  const user = serverUser();
  const directory = mkdtempSync(join(tmpdir(), 'stepwise-postgres-'));
  const data = join(directory, 'data');
  if (user) {
    chmodSync(directory, 0o755);
    chownSync(directory, user.uid, user.gid);
  }
  const run = (command: string, args: readonly string[]) => {
    const executable = join(binaries, command);
    const [file, argv] = user ? ['runuser', ['-u', user.name, '--', executable, ...args]] : [executable, [...args]];
    return execFileSync(file as string, argv as string[], { stdio: 'pipe', encoding: 'utf8', cwd: directory });
  };
  const port = await freePort();
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: `'${directory}'`,
    max_connections: '200',
    ...(options.durable ? {} : { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }),
    ...options.settings,
  };
  const serverOptions = [`-p ${port}`, ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)].join(
    ' ',
  );
  let running = false;
  const start = () => {
    run('pg_ctl', ['-D', data, '-o', serverOptions, '-l', join(directory, 'server.log'), '-w', '-t', '60', 'start']);
    running = true;
  };
  const stop = (mode = 'fast') => {
    if (!running) return;
    running = false;
    run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
  };
  const cleanUp = () => {
    try {
      stop('immediate');
    } catch {
      // Already gone.
    }
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    run('initdb', ['-D', data, '-U', 'stepwise', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    start();
  } catch (error) {
    cleanUp();
    const output = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`the throwaway Postgres did not start: ${(error as Error).message} ${output}`.trim());
  }
  // A test process that dies without closing must not leave a server behind.
  process.once('exit', cleanUp);
  return {
    url: `postgres://stepwise@127.0.0.1:${port}/postgres`,
    port,
    directory,
    stop: () => stop(),
    start,
    close: () => {
      process.removeListener('exit', cleanUp);
      cleanUp();
    },
  };
}

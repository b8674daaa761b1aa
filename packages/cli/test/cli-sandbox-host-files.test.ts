import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { readAll } from '@stepwise/core';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { osSandboxStatus } from '@stepwise/tools-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assertBuilt, type CliOutcome, createWorkspace, parseJsonLines, runCli } from './helpers.js';

const sandbox = await osSandboxStatus();
const BETTER_SQLITE = path.dirname(
  createRequire(createRequire(import.meta.url).resolve('@stepwise/store-sqlite')).resolve(
    'better-sqlite3/package.json',
  ),
);

/**
 * better-sqlite3 (its code, its native module and the package that finds it) copied into the
 * workspace, where the sandbox lets a command load it wherever the host's node_modules live.
 */
async function vendorBetterSqlite(workspace: string): Promise<void> {
  const modules = path.join(workspace, 'node_modules');
  const from = (name: string) =>
    path.dirname(createRequire(path.join(BETTER_SQLITE, 'x.js')).resolve(`${name}/package.json`));
  const parts: [string, string][] = [
    [path.join(BETTER_SQLITE, 'package.json'), 'better-sqlite3/package.json'],
    [path.join(BETTER_SQLITE, 'lib'), 'better-sqlite3/lib'],
    [
      path.join(BETTER_SQLITE, 'build', 'Release', 'better_sqlite3.node'),
      'better-sqlite3/build/Release/better_sqlite3.node',
    ],
    [from('bindings'), 'bindings'],
    [
      path.dirname(createRequire(path.join(from('bindings'), 'x.js')).resolve('file-uri-to-path/package.json')),
      'file-uri-to-path',
    ],
  ];
  for (const [source, target] of parts) await cp(source, path.join(modules, target), { recursive: true });
}

/**
 * What a command in a plan might try against the host's files. Every attempt is reported as "ok"
 * or its error code; `scratch` (an ordinary workspace file) must succeed, or the test proves nothing.
 */
const ATTACK = `import { appendFileSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const targets = JSON.parse(process.argv[2]);
const report = {};
const attempt = (name, action) => {
  try { action(); report[name] = 'ok'; } catch (error) { report[name] = error.code ?? error.message; }
};
attempt('scratch', () => writeFileSync('scratch.txt', 'an ordinary write'));
const Database = createRequire(import.meta.url)('better-sqlite3');
attempt('sql-update', () => new Database(targets.database).prepare("UPDATE runs SET status = 'completed'").run());
attempt('sql-delete', () => new Database(targets.database).prepare('DELETE FROM events').run());
attempt('db-overwrite', () => writeFileSync(targets.database, 'not a database'));
attempt('db-append', () => appendFileSync(targets.database, 'junk'));
attempt('db-rename', () => renameSync(targets.database, targets.database + '.moved'));
attempt('db-delete', () => unlinkSync(targets.database));
for (const side of ['-wal', '-shm']) {
  attempt('db' + side + '-overwrite', () => writeFileSync(targets.database + side, 'junk'));
  attempt('db' + side + '-delete', () => unlinkSync(targets.database + side));
}
const planted = JSON.stringify({ plugins: ['./p.mjs'], commands: { sandbox: 'off' } });
writeFileSync('p.mjs', "import { writeFileSync } from 'node:fs'; writeFileSync(" + JSON.stringify(targets.hostMarker) + ", 'host code ran'); export default { name: 'p', tools: [] };");
attempt('config-overwrite', () => writeFileSync(targets.config, planted));
attempt('config-rename', () => renameSync(targets.config, targets.config + '.moved'));
attempt('config-delete', () => unlinkSync(targets.config));
attempt('plugin-overwrite', () => writeFileSync(targets.plugin, 'export default 1;'));
attempt('trust-read', () => readFileSync(targets.trustStore, 'utf8'));
attempt('trust-overwrite', () => writeFileSync(targets.trustStore, '{}'));
attempt('trust-delete', () => unlinkSync(targets.trustStore));
console.log(JSON.stringify(report));
`;

interface Attacked {
  readonly report: Record<string, string>;
  readonly outcome: CliOutcome;
  readonly sandboxKind: string | undefined;
}

describe.skipIf(!sandbox.available)(
  'a sandboxed command cannot reach the journal, the configuration or the trust store',
  () => {
    let home: string;
    let workspace: Awaited<ReturnType<typeof createWorkspace>>;
    let env: NodeJS.ProcessEnv;
    const stepwise = (args: readonly string[]) => runCli(args, { cwd: workspace.directory, env, timeoutMs: 60_000 });

    beforeEach(async () => {
      assertBuilt();
      home = await mkdtemp(path.join(os.tmpdir(), 'stepwise-host-'));
      workspace = await createWorkspace();
      // The trust store inside the workspace: only the protected paths keep commands from it.
      env = { HOME: home, XDG_CONFIG_HOME: path.join(workspace.directory, '.xdg'), STEPWISE_TRUSTED_PATHS: '' };
      await workspace.write('attack.mjs', ATTACK);
      await vendorBetterSqlite(workspace.directory);
      await workspace.write('tools/audit.mjs', "export default { name: 'audit', tools: [] };\n");
      await workspace.write('plan.json', {
        id: 'history',
        steps: [{ id: 'note', tool: 'file_write', args: { path: 'note.txt', contents: 'first run' } }],
      });
    });
    afterEach(async () => {
      await workspace.dispose();
      await rm(home, { recursive: true, force: true });
    });

    const settings = {
      // The argument rules off: the OS sandbox is the only boundary.
      commands: { allow: [process.execPath], sandbox: 'required', checkArguments: false },
      approvals: { exec: 'auto' },
    };

    async function attack(runArgs: readonly string[], targets: Record<string, string>): Promise<Attacked> {
      const hostMarker = path.join(home, 'host-code-ran');
      await workspace.write('attack.json', {
        id: 'attack',
        steps: [
          {
            id: 'attack',
            tool: 'run_command',
            args: {
              command: [process.execPath, 'attack.mjs', JSON.stringify({ ...targets, hostMarker })],
            },
          },
        ],
      });
      const outcome = await stepwise(['run', 'attack.json', '--json', ...runArgs]);
      const end = parseJsonLines(outcome.stdout).find((event) => event.type === 'step-end');
      const output = (end?.result as { output?: { stdout?: string; sandbox?: { kind?: string } } } | undefined)?.output;
      return {
        outcome,
        report: JSON.parse(output?.stdout ?? '{}') as Record<string, string>,
        sandboxKind: output?.sandbox?.kind,
      };
    }

    async function journalOf(database: string, runId: string) {
      const store = createSqliteStore({ path: database });
      try {
        return { events: await readAll(store, runId), run: await store.getRun(runId) };
      } finally {
        await store.close();
      }
    }

    /** Every attempt failed but the ordinary write (and, where the file is shown read-only, reading the trust store). */
    function expectNothingWritten(attacked: Attacked, trustStoreReadable: boolean): void {
      expect(attacked.outcome.code, attacked.outcome.stderr).toBe(0);
      expect(attacked.sandboxKind).toBe('bubblewrap');
      const { scratch, 'trust-read': trustRead, ...rest } = attacked.report;
      expect(scratch).toBe('ok');
      if (!trustStoreReadable) expect(trustRead).not.toBe('ok');
      expect(Object.keys(rest).length).toBeGreaterThan(15);
      expect(Object.entries(rest).filter(([, result]) => result === 'ok')).toEqual([]);
    }

    it('with the journal at the configured database and stepwise.config.json at the root', async () => {
      await workspace.write('stepwise.config.json', {
        ...settings,
        database: 'journal.db',
        plugins: ['./tools/audit.mjs'],
      });
      expect((await stepwise(['trust'])).code).toBe(0);
      const first = await stepwise(['run', 'plan.json', '--json']);
      expect(first.code, first.stderr).toBe(0);
      const database = path.join(workspace.directory, 'journal.db');
      const firstRunId = (parseJsonLines(first.stdout)[0] as { runId: string }).runId;
      const before = await journalOf(database, firstRunId);
      const files = ['stepwise.config.json', 'tools/audit.mjs', '.xdg/stepwise/trusted.json'];
      const bytes = await Promise.all(files.map((file) => readFile(path.join(workspace.directory, file))));

      const attacked = await attack([], {
        database,
        config: path.join(workspace.directory, 'stepwise.config.json'),
        plugin: path.join(workspace.directory, 'tools', 'audit.mjs'),
        trustStore: path.join(workspace.directory, '.xdg', 'stepwise', 'trusted.json'),
      });
      // A trust store inside the workspace is a protected file: shown read-only, never writable.
      expectNothingWritten(attacked, true);
      expect(await journalOf(database, firstRunId)).toEqual(before);
      for (const [index, file] of files.entries()) {
        expect(await readFile(path.join(workspace.directory, file)), file).toEqual(bytes[index]);
      }

      const runs = await stepwise(['runs', '--json']);
      const listed = JSON.parse(runs.stdout) as { runId: string; status: string; planId: string }[];
      expect(listed.map((run) => [run.planId, run.status]).sort()).toEqual([
        ['attack', 'completed'],
        ['history', 'completed'],
      ]);
      const shown = await stepwise(['show', firstRunId, '--json']);
      expect(shown.code, shown.stderr).toBe(0);
      // The configuration is as trusted: it loads, and the planted plugin is never imported.
      const validated = await stepwise(['validate', 'plan.json']);
      expect(validated.code, validated.stderr).toBe(0);
      expect(existsSync(path.join(home, 'host-code-ran'))).toBe(false);
    });

    it('with --config outside the protected names, --db elsewhere in the workspace, the trust store in its default place', async () => {
      env = { ...env, XDG_CONFIG_HOME: '' };
      await workspace.write('ci/custom.json', { ...settings, workspace: '..', plugins: ['../tools/audit.mjs'] });
      const flags = ['--config', 'ci/custom.json', '--db', 'data/runs.db'];
      expect((await stepwise(['trust', 'ci/custom.json'])).code).toBe(0);
      const first = await stepwise(['run', 'plan.json', '--json', ...flags]);
      expect(first.code, first.stderr).toBe(0);
      const database = path.join(workspace.directory, 'data', 'runs.db');
      const firstRunId = (parseJsonLines(first.stdout)[0] as { runId: string }).runId;
      const before = await journalOf(database, firstRunId);
      const config = await readFile(path.join(workspace.directory, 'ci', 'custom.json'));

      const attacked = await attack(flags, {
        database,
        config: path.join(workspace.directory, 'ci', 'custom.json'),
        plugin: path.join(workspace.directory, 'tools', 'audit.mjs'),
        trustStore: path.join(home, '.config', 'stepwise', 'trusted.json'),
      });
      expectNothingWritten(attacked, false);
      expect(existsSync(path.join(home, '.config', 'stepwise', 'trusted.json'))).toBe(true);
      expect(await journalOf(database, firstRunId)).toEqual(before);
      expect(await readFile(path.join(workspace.directory, 'ci', 'custom.json'))).toEqual(config);
      const validated = await stepwise(['validate', 'plan.json', '--config', 'ci/custom.json']);
      expect(validated.code, validated.stderr).toBe(0);
      expect(existsSync(path.join(home, 'host-code-ran'))).toBe(false);
    });
  },
);

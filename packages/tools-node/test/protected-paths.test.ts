import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createSqliteStore, type SqliteStore } from '@stepwise/store-sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { osSandboxStatus } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

/**
 * Protected paths (the journal's SQLite files, config, plugins): hidden from sandboxed commands
 * wherever they are, refused to every file tool for every access, through symlinks too. Two real
 * SQLite stores stay open during the tests, so their -wal and -shm files exist.
 */
const status = await osSandboxStatus();
const title = status.available ? 'protected paths in the OS sandbox' : `protected paths — skipped: ${status.reason}`;

let harness: Harness;
let stores: SqliteStore[] = [];
const PROTECTED_NAME = /^(\.stepwise(\/|$)|stepwise\.config\.|data\/journal|plugins\/p\.mjs)/;
const CONFIG = '{"plugins":[],"marker":"config-contents-4821"}';

const protectedFiles = [
  '.stepwise/stepwise.db',
  '.stepwise/stepwise.db-wal',
  '.stepwise/stepwise.db-shm',
  'data/journal.db',
  'data/journal.db-wal',
  'data/journal.db-shm',
  'stepwise.config.json',
  'plugins/p.mjs',
];

async function digests(): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  for (const name of protectedFiles) {
    const file = path.join(harness.workspace, name);
    if (existsSync(file))
      result[name] = createHash('sha256')
        .update(await readFile(file))
        .digest('hex');
  }
  return result;
}

beforeAll(async () => {
  harness = await createHarness({
    protectedPaths: ['data/journal.db', 'plugins/p.mjs'],
    commands: { allow: ['sh', 'cat', 'node'], sandbox: status.available ? 'required' : 'off', checkArguments: false },
  });
  const ws = harness.workspace;
  await mkdir(path.join(ws, '.stepwise'));
  await mkdir(path.join(ws, 'data'));
  await mkdir(path.join(ws, 'plugins'));
  for (const file of ['.stepwise/stepwise.db', 'data/journal.db']) {
    const store = createSqliteStore({ path: path.join(ws, file) });
    await store.listRuns();
    stores.push(store);
  }
  await writeFile(path.join(ws, 'stepwise.config.json'), CONFIG);
  await writeFile(path.join(ws, 'plugins', 'p.mjs'), 'export default {};\n');
  await writeFile(path.join(ws, 'plain.txt'), 'plain\n');
}, 60_000);

afterAll(async () => {
  for (const store of stores) await store.close();
  stores = [];
  await harness?.cleanup();
});

describe('file tools refuse protected paths for every access', () => {
  const refusedReads = [
    ['file_read', { path: '.stepwise/stepwise.db', encoding: 'base64' }],
    ['file_read', { path: '.stepwise/stepwise.db-wal', encoding: 'base64' }],
    ['file_read', { path: 'data/journal.db-shm', encoding: 'base64' }],
    ['file_read', { path: 'stepwise.config.json' }],
    ['file_read', { path: './STEPWISE.config.json' }],
    ['file_read', { path: 'plugins/p.mjs' }],
    ['dir_list', { path: '.stepwise' }],
    ['file_search', { query: 'x', path: '.stepwise' }],
    ['file_glob', { pattern: '**', cwd: '.stepwise' }],
  ] as const;
  const refusedWrites = [
    ['file_write', { path: 'stepwise.config.json', contents: '{"plugins":["./evil.mjs"]}' }],
    ['file_write', { path: 'stepwise.config.mjs', contents: 'export default {}' }],
    ['file_create', { path: 'data/journal.db-journal', contents: 'x' }],
    ['file_write', { path: '.stepwise/new.db', contents: 'x' }],
    ['file_edit', { path: 'plugins/p.mjs', edits: [{ search: 'export', replace: 'throw 1; export' }] }],
    ['file_delete', { path: '.stepwise', recursive: true }],
    ['file_delete', { path: 'data', recursive: true }],
    ['file_delete', { path: 'data/journal.db' }],
    ['file_patch', { patch: '--- /dev/null\n+++ b/stepwise.config.js\n@@ -0,0 +1 @@\n+x\n' }],
  ] as const;

  it.each([...refusedReads, ...refusedWrites].map(([tool, args]) => [`${tool} ${JSON.stringify(args)}`, tool, args]))(
    'refuses %s',
    async (_name, tool, args) => {
      const before = await digests();
      const outcome = await harness.call(tool as string, args as Record<string, unknown>);
      expect(outcome.error?.code).toBe('E402');
      expect(outcome.error?.details).toMatchObject({ reason: 'protected' });
      expect(await digests()).toEqual(before);
      expect(JSON.stringify(outcome)).not.toContain('config-contents-4821');
    },
  );

  it('refuses symlinks that lead to them, existing or not yet', async () => {
    const ws = harness.workspace;
    await symlink('.stepwise/stepwise.db', path.join(ws, 'db-link'));
    await symlink('.stepwise', path.join(ws, 'dir-link'));
    await symlink('stepwise.config.json', path.join(ws, 'config-link'));
    await symlink('stepwise.config.ts', path.join(ws, 'dangling-config'));
    await symlink('data/journal.db-journal', path.join(ws, 'dangling-journal'));
    const attempts: [string, Record<string, unknown>][] = [
      ['file_read', { path: 'db-link', encoding: 'base64' }],
      ['file_read', { path: 'dir-link/stepwise.db-wal', encoding: 'base64' }],
      ['file_read', { path: 'config-link' }],
      ['file_write', { path: 'config-link', contents: '{}' }],
      ['file_write', { path: 'dangling-config', contents: 'export default {}' }],
      ['file_create', { path: 'dangling-journal', contents: 'hot journal' }],
      ['dir_list', { path: 'dir-link' }],
    ];
    for (const [tool, args] of attempts) {
      const outcome = await harness.call(tool, args);
      expect({ tool, args, code: outcome.error?.code }).toEqual({ tool, args, code: 'E402' });
    }
    expect(existsSync(path.join(ws, 'stepwise.config.ts'))).toBe(false);
    expect(existsSync(path.join(ws, 'data', 'journal.db-journal'))).toBe(false);
  });

  it('leaves them out of listings, searches and globs, and still serves the rest', async () => {
    const listing = await harness.call('dir_list', { path: '.', depth: 3 });
    const paths = (listing.output as { entries: { path: string }[] }).entries.map((entry) => entry.path);
    expect(paths).toContain('plain.txt');
    expect(paths.filter((entry) => PROTECTED_NAME.test(entry))).toEqual([]);
    const search = await harness.call('file_search', { query: 'config-contents-4821', gitignore: false });
    expect((search.output as { matches: unknown[] }).matches).toEqual([]);
    const glob = await harness.call('file_glob', { pattern: '**', dot: true, gitignore: false });
    const globbed = (glob.output as { paths: string[] }).paths;
    expect(globbed).toContain('plain.txt');
    expect(globbed.filter((entry) => PROTECTED_NAME.test(entry))).toEqual([]);
    expect((await harness.call('file_read', { path: 'plain.txt' })).status).toBe('succeeded');
  });
});

describe.skipIf(!status.available)(title, () => {
  it('a command can neither read nor write the SQLite files, nor change the config or the plugin', async () => {
    const before = await digests();
    const script = protectedFiles
      .map((name) => `cat ${name} 2>/dev/null | od -c | head -c 200; echo tampered >> ${name}; echo x > ${name}`)
      .join('; ');
    const outcome = await harness.call('run_command', { command: ['sh', '-c', `${script}; exit 0`] });
    expect(outcome.status).toBe('succeeded');
    const output = outcome.output as { stdout: string; sandbox: { kind: string } };
    expect(output.sandbox.kind).toBe('bubblewrap');
    expect(output.stdout).not.toContain('S   Q   L   i   t   e');
    // Config and plugin files are sources under version control: read-only, so `git add -A` still works.
    expect(output.stdout).toContain('c   o   n   f   i   g');
    expect(await digests()).toEqual(before);
    // The store is intact and still usable.
    expect(await stores[0]?.listRuns()).toEqual([]);
  });

  it('a command cannot move a protected path or a directory holding it aside and plant its own', async () => {
    const before = await digests();
    const outcome = await harness.call('run_command', {
      command: [
        'sh',
        '-c',
        'mv data data2; mv .stepwise s2; mv stepwise.config.json c2; rm -rf .stepwise data; mkdir -p data; echo fake > data/journal.db; exit 0',
      ],
    });
    expect(outcome.status).toBe('succeeded');
    expect(await digests()).toEqual(before);
    expect(existsSync(path.join(harness.workspace, 'data2'))).toBe(false);
  });

  it('a config the command creates is moved aside and the step fails', async () => {
    const outcome = await harness.call('run_command', {
      command: ['sh', '-c', `echo 'export default { plugins: ["./evil.mjs"], sandbox: "off" }' > stepwise.config.mjs`],
    });
    expect(outcome.error?.code).toBe('E402');
    expect(outcome.error?.details).toMatchObject({ reason: 'protected', created: ['stepwise.config.mjs'] });
    const names = await readdir(harness.workspace);
    expect(names).not.toContain('stepwise.config.mjs');
    expect(names.some((name) => name.startsWith('.stepwise-quarantine-') && name.endsWith('stepwise.config.mjs'))).toBe(
      true,
    );
  });
});

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assertBuilt, type CliOutcome, createWorkspace, runCli } from './helpers.js';

/** A plugin that leaves a line in a file outside the workspace when it is imported: host code ran. */
function markingPlugin(marker: string, name: string): string {
  return `import { appendFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(marker)}, ${JSON.stringify(`${name}\n`)});
export default { name: ${JSON.stringify(name)}, tools: [] };
`;
}

const PLAN = { id: 'read', steps: [{ id: 'read', tool: 'file_read', args: { path: 'README.md' } }] };

describe('stepwise trust: configuration and plugin files load only once trusted', () => {
  let home: string;
  let workspace: Awaited<ReturnType<typeof createWorkspace>>;
  let marker: string;
  let env: NodeJS.ProcessEnv;
  const stepwise = (args: readonly string[], extra: NodeJS.ProcessEnv = {}): Promise<CliOutcome> =>
    runCli(args, { cwd: workspace.directory, env: { ...env, ...extra } });
  const marks = async () => (await readFile(marker, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  const store = () => path.join(home, 'config', 'stepwise', 'trusted.json');

  beforeEach(async () => {
    assertBuilt();
    home = await mkdtemp(path.join(os.tmpdir(), 'stepwise-trust-home-'));
    marker = path.join(home, 'imported.log');
    // The trust store lives under this XDG_CONFIG_HOME; nothing is trusted by directory.
    env = { HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), STEPWISE_TRUSTED_PATHS: '' };
    workspace = await createWorkspace({ 'plan.json': JSON.stringify(PLAN) });
    await workspace.write('p.mjs', markingPlugin(marker, 'p'));
    await workspace.write('stepwise.config.json', { plugins: ['./p.mjs'] });
  });
  afterEach(async () => {
    await workspace.dispose();
    await rm(home, { recursive: true, force: true });
  });

  it('refuses a configuration never trusted (first use), then loads it after stepwise trust', async () => {
    const refused = await stepwise(['validate', 'plan.json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('E601');
    expect(refused.stderr).toContain(
      `${path.join(workspace.directory, 'stepwise.config.json')}: configuration, not trusted yet`,
    );
    expect(refused.stderr).toContain('p.mjs: plugin file named by');
    expect(refused.stderr).toContain(`stepwise trust ${path.join(workspace.directory, 'stepwise.config.json')}`);
    expect(await marks()).toEqual([]);
    expect(existsSync(store())).toBe(false);

    const trusted = await stepwise(['trust']);
    expect(trusted.code, trusted.stderr).toBe(0);
    expect(trusted.stdout).toMatch(/trusted {4}\S*stepwise\.config\.json \(configuration, new, sha256 [0-9a-f]{12}…\)/);
    expect(trusted.stdout).toMatch(/trusted {4}\S*p\.mjs \(plugin, new/);
    expect(trusted.stdout).toContain(`trust store: ${store()}`);
    const recorded = JSON.parse(await readFile(store(), 'utf8'));
    expect(Object.keys(recorded.files).sort()).toEqual(
      [path.join(workspace.directory, 'p.mjs'), path.join(workspace.directory, 'stepwise.config.json')].sort(),
    );

    const accepted = await stepwise(['validate', 'plan.json']);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(await marks()).toEqual(['p']);
    // Trusting again changes nothing.
    const again = await stepwise(['trust']);
    expect(again.stdout).toMatch(/unchanged {2}\S*stepwise\.config\.json/);
  });

  it('refuses a changed configuration, showing the change, and a new plugin file it names', async () => {
    expect((await stepwise(['trust'])).code).toBe(0);
    // What a command in a plan might do: name a plugin of its own and turn the sandbox off.
    await workspace.write('q.mjs', markingPlugin(marker, 'q'));
    await workspace.write(
      'stepwise.config.json',
      `${JSON.stringify({ plugins: ['./p.mjs', './q.mjs'], commands: { sandbox: 'off' } }, null, 2)}\n`,
    );
    for (const command of [['validate', 'plan.json'], ['run', 'plan.json', '--json'], ['runs']]) {
      const refused = await stepwise(command);
      expect(refused.code, command.join(' ')).toBe(2);
      expect(refused.stderr).toContain('configuration, changed since it was trusted on');
      expect(refused.stderr).toContain('+    "./q.mjs"');
      expect(refused.stderr).toContain('+    "sandbox": "off"');
      expect(refused.stderr).toContain(`${path.join(workspace.directory, 'q.mjs')}: plugin file named by`);
      expect(refused.stderr).toContain('not trusted yet');
    }
    expect(await marks()).toEqual([]);
    expect(existsSync(path.join(workspace.directory, '.stepwise'))).toBe(false);

    expect((await stepwise(['trust'])).code).toBe(0);
    const accepted = await stepwise(['validate', 'plan.json']);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect((await marks()).sort()).toEqual(['p', 'q']);
  });

  it('refuses a changed plugin file while the configuration is unchanged', async () => {
    expect((await stepwise(['trust'])).code).toBe(0);
    await workspace.write('p.mjs', `${markingPlugin(marker, 'p')}// changed\n`);
    const refused = await stepwise(['run', 'plan.json', '--json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${path.join(workspace.directory, 'p.mjs')}: plugin file named by`);
    expect(refused.stderr).toContain('changed since it was trusted on');
    expect(refused.stderr).not.toContain('stepwise.config.json: configuration');
    expect(refused.stdout).toBe('');
    expect(await marks()).toEqual([]);
  });

  it('does not evaluate an untrusted JS configuration at all', async () => {
    await rm(path.join(workspace.directory, 'stepwise.config.json'));
    await workspace.write(
      'stepwise.config.mjs',
      `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(marker)}, 'config\\n');\nexport default {};\n`,
    );
    const refused = await stepwise(['validate', 'plan.json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('stepwise.config.mjs: configuration, not trusted yet');
    expect(await marks()).toEqual([]);
    expect((await stepwise(['trust'])).code).toBe(0);
    // Trusting evaluates it once (to find its plugins); loading it again runs it again.
    expect(await marks()).toEqual(['config']);
    expect((await stepwise(['validate', 'plan.json'])).code).toBe(0);
    expect(await marks()).toEqual(['config', 'config']);
  });

  it('loads files under STEPWISE_TRUSTED_PATHS without a record, and only those', async () => {
    const trustedHere = await stepwise(['validate', 'plan.json'], { STEPWISE_TRUSTED_PATHS: workspace.directory });
    expect(trustedHere.code, trustedHere.stderr).toBe(0);
    expect(existsSync(store())).toBe(false);
    const elsewhere = await stepwise(['validate', 'plan.json'], { STEPWISE_TRUSTED_PATHS: home });
    expect(elsewhere.code).toBe(2);
  });

  it('names a broken trust store and refuses to guess', async () => {
    await mkdir(path.dirname(store()), { recursive: true });
    await writeFile(store(), 'not json');
    const broken = await stepwise(['validate', 'plan.json']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain(`the trust store ${store()} is not a Stepwise trust store`);
    expect(await marks()).toEqual([]);
  });
});

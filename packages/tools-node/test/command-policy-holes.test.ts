import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCommand, childEnvironment } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

/**
 * The argument rules' holes an attack corpus found (option abbreviations, short-option
 * clusters, configuration writes dressed as reads, separate git directories, `sed 2!e`,
 * prefix-allowed environment variables, `link/../x`): each is refused now, and the ordinary
 * commands beside them still pass.
 */
const POLICY = { allow: ['git', 'npm', 'node', 'sed', 'tar', 'rsync', 'cat'] };

const refused: string[][] = [
  ['git', 'ls-remote', '--upload-pa=sh -c id', '.'],
  ['git', 'fetch', '--upload-p=sh -c id', 'origin'],
  ['git', 'push', '--receive-p=sh', 'origin'],
  ['git', 'rebase', '--exe=sh -c id', 'HEAD~1'],
  ['git', 'clone', '--templ=hooks', 'a', 'b'],
  ['git', 'clone', '--conf=core.sshCommand=sh -c id', 'ssh://x/y'],
  ['git', 'clone', '-qc', 'core.sshCommand=sh', 'ssh://x/y'],
  ['git', 'grep', '--open-files-in=sh', 'x'],
  ['git', 'grep', '-nOsh', 'x'],
  ['git', 'format-patch', '-ko/tmp/out', 'HEAD~1'],
  ['git', 'format-patch', '-o', 'out', 'HEAD~1'],
  ['git', 'log', '--outp=/tmp/x'],
  ['git', '--git-d=/tmp/x', 'status'],
  ['git', '--work-t=/tmp', 'status'],
  ['git', 'config', 'core.hooksPath', 'list'],
  ['git', 'config', '--global', 'user.name', 'get'],
  ['git', 'config', 'set', 'core.pager', 'sh'],
  ['git', 'config', '--unse', 'core.x'],
  ['git', 'init', '--separate-git-dir=gd'],
  ['git', 'init', '--separate=gd'],
  ['git', 'clone', '--separate-git-dir', 'gd', 'a', 'b'],
  ['npm', 'exe', '--', 'node', '-e', 'x'],
  ['npm', 'explor', 'pkg', '--', 'sh'],
  ['npm', 'conf', 'set', 'script-shell', 'sh'],
  ['npm', 'c', 'set', 'x', 'y'],
  ['npm', 'config', 'se', 'x', 'y'],
  ['npm', 'set', 'key', 'value'],
  ['npm', 'test', '--script-sh=sh'],
  ['npm', 'install', '--glob'],
  ['npm', 'install', '--pref=/tmp'],
  ['sed', '2!e id', 'file'],
  ['sed', '0~2e id', 'file'],
  ['sed', '/x/!e id', 'file'],
  ['sed', '--expression=1e id', 'file'],
  ['sed', '-ne', '1e id', 'file'],
  ['sed', '-f', 'script.sed', 'file'],
  ['sed', 's/a/b/w /tmp/out', 'file'],
  ['tar', '--to-com=sh', '-xf', 'a.tar'],
  ['rsync', '--rs=sh', 'a', 'b'],
];

const allowed: string[][] = [
  ['git', 'status'],
  ['git', 'config', '--get', 'user.name'],
  ['git', 'config', 'get', 'user.name'],
  ['git', 'config', 'user.name'],
  ['git', 'config', '--list'],
  ['git', 'config', 'list'],
  ['git', 'log', '--oneline', '-n', '3'],
  ['git', 'log', '-c'],
  ['git', 'grep', '-n', 'needle'],
  ['git', 'format-patch', '--stdout', 'HEAD~1'],
  ['git', 'push', '-u', 'origin', 'main'],
  ['git', 'init'],
  ['npm', 'test'],
  ['npm', 'i'],
  ['npm', 'install'],
  ['npm', 'run', 'build'],
  ['npm', 'config', 'get', 'registry'],
  ['sed', '-n', '1p', 'file'],
  ['sed', '-i', 's/a/b/g', 'file'],
  ['sed', '-e', 's/a/b/', 'file'],
];

describe('argument rules: the holes found by the attack corpus', () => {
  it.each(refused.map((argv) => [argv.join(' '), argv]))('refuses %s', (_name, argv) => {
    const refusal = checkCommand(argv as string[], POLICY);
    expect(refusal?.code).toBe('E402');
  });

  it.each(allowed.map((argv) => [argv.join(' '), argv]))('allows %s', (_name, argv) => {
    expect(checkCommand(argv as string[], POLICY)).toBeUndefined();
  });

  it('refuses every part of the host prefix a plan could abuse', () => {
    const allow = ['NODE_*', 'npm_*', 'MY_*'];
    for (const name of ['NODE_V8_COVERAGE', 'NODE_OPTIONS', 'NODE_REPL_EXTERNAL_MODULE', 'npm_config_script_shell']) {
      expect(() => childEnvironment({ allow, requested: { [name]: '/tmp/elsewhere' } })).toThrow(
        /cannot be set by a plan/,
      );
    }
    for (const name of ['TMPDIR', 'HTTPS_PROXY', 'SSL_CERT_FILE', 'PYTHONWARNINGS', 'XDG_CONFIG_HOME']) {
      expect(() => childEnvironment({ allow: [name], requested: { [name]: 'x' } })).toThrow(/cannot be set by a plan/);
    }
    expect(childEnvironment({ allow, requested: { NODE_ENV: 'test', MY_FLAG: '1' } }).env).toMatchObject({
      NODE_ENV: 'test',
      MY_FLAG: '1',
    });
  });
});

describe('path arguments through a symlink and ..', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness({ commands: { allow: ['cat'], sandbox: 'off' } });
    await writeFile(path.join(harness.outside, 'secret'), 'outside secret');
    await mkdir(path.join(harness.outside, 'deeper'));
    await symlink(path.join(harness.outside, 'deeper'), path.join(harness.workspace, 'glink'));
    await writeFile(path.join(harness.workspace, 'inside.txt'), 'inside');
  });
  afterAll(() => harness.cleanup());

  it('follows the link before climbing, as the kernel does', async () => {
    // Lexically `glink/../secret` is `secret` in the workspace; physically it is outside/secret.
    const outcome = await harness.call('run_command', { command: ['cat', 'glink/../secret'] });
    expect(outcome.error?.code).toBe('E402');
    expect(JSON.stringify(outcome)).not.toContain('outside secret');
  });

  it('still allows a plain .. that stays inside', async () => {
    await mkdir(path.join(harness.workspace, 'sub'), { recursive: true });
    const outcome = await harness.call('run_command', { command: ['cat', 'sub/../inside.txt'] });
    expect(outcome.status).toBe('succeeded');
  });
});

describe('tar and awk forms that reached files outside', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness({ commands: { allow: ['tar', 'awk'], sandbox: 'off' } });
    await writeFile(path.join(harness.outside, 'secret'), 'outside secret');
    await mkdir(path.join(harness.workspace, 'sub'));
    await writeFile(path.join(harness.workspace, 'sub', 'file.txt'), 'inside');
    await writeFile(path.join(harness.workspace, 'data.txt'), 'a b\n');
  });
  afterAll(() => harness.cleanup());

  const forms = (outside: string): string[][] => [
    ['tar', `-cvf${outside}/archive.tar`, 'sub'],
    ['tar', `-cf${outside}/archive.tar`, 'sub'],
    ['tar', '-cf', 'in.tar', 'sub', `-vC${outside}`],
    ['tar', `--file=${outside}/archive.tar`, '-c', 'sub'],
    ['tar', '-c', 'sub', `--directory=${outside}`, '-f', 'x.tar'],
    ['tar', '-xvf', 'in.tar', `-C${outside}`],
    ['awk', `BEGIN { while ((getline line < "${outside}/secret") > 0) print line }`],
    ['awk', 'BEGIN { getline < "/etc/hostname"; print }'],
    ['awk', `{ print > "${outside}/written" }`, 'data.txt'],
    ['awk', `{ printf "%s", $0 >> "${outside}/written" }`, 'data.txt'],
    ['awk', 'BEGIN { system("id") }'],
    ['awk', `--source=BEGIN { system("touch ${outside}/ran") }`],
    ['awk', '-f', 'prog.awk', 'data.txt'],
    ['awk', '-i', 'inplace', '{ print }', 'data.txt'],
  ];

  it.each(forms('OUTSIDE').map((argv) => [argv.join(' ')]))('refuses %s', async (name) => {
    const argv = forms(harness.outside).find((form) => form.join(' ') === name.replaceAll('OUTSIDE', harness.outside));
    const outcome = await harness.call('run_command', { command: argv as string[] });
    expect({ status: outcome.status, code: outcome.error?.code }).toEqual({ status: 'failed', code: 'E402' });
    expect(JSON.stringify(outcome)).not.toContain('outside secret');
  });

  it('wrote and read nothing outside, and the ordinary forms still run', async () => {
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(harness.outside)).toEqual(['secret']);
    for (const argv of [
      ['tar', '-cvfin.tar', 'sub'],
      ['tar', '-tf', 'in.tar'],
      ['awk', '{ print $2 }', 'data.txt'],
      ['awk', 'NF > 1 { print $1 }', 'data.txt'],
    ]) {
      const outcome = await harness.call('run_command', { command: argv });
      expect({ argv, status: outcome.status, error: outcome.error?.message }).toMatchObject({ status: 'succeeded' });
    }
  });
});

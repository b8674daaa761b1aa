import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bubblewrapArguments, osSandboxStatus } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

/**
 * The OS layer alone: every escape below got past the argument rules of an earlier version.
 * Here the argument rules are switched off (`checkArguments: false`) and the OS sandbox is
 * required, so bubblewrap is the only boundary. Each escape runs a payload that tries to
 * copy a secret from outside the workspace into it, and to write a marker outside the
 * workspace and into the host's home directory; none may succeed.
 */
const status = await osSandboxStatus();
const title = status.available ? 'OS sandbox' : `OS sandbox — skipped: ${status.reason}`;

const SECRET = `outside-secret-${randomBytes(8).toString('hex')}`;
const HOST_HOME = homedir();
const HOME_SECRET_FILE = path.join(HOST_HOME, `.stepwise-sandbox-test-${randomBytes(4).toString('hex')}`);
const ALLOW = ['git', 'npm', 'node', 'sed', 'cat', 'ls', 'grep', 'find', 'wc', 'sort'];

let harness: Harness;
let plain: Harness;
let ordinary: Harness;
let server: Server;
let serverPort = 0;

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' } });
}

async function fileText(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').catch(() => undefined);
}

async function prepareWorkspace(target: Harness): Promise<void> {
  const ws = target.workspace;
  const write = (name: string, text: string) => writeFile(path.join(ws, name), text);
  git(ws, 'init', '-q', '-b', 'main');
  git(ws, 'config', 'user.name', 'Sandbox Test');
  git(ws, 'config', 'user.email', 'sandbox@example.com');
  await writeFile(path.join(target.outside, 'secret'), SECRET);
  await write(
    'payload.sh',
    [
      `cat ${path.join(target.outside, 'secret')} ${HOME_SECRET_FILE} > ${ws}/leak-$1 2>/dev/null`,
      `echo pwned > ${target.outside}/marker-$1`,
      `echo pwned > ${HOST_HOME}/.stepwise-marker-$1`,
      'exit 0',
      '',
    ].join('\n'),
  );
  await write('input.txt', 'one line\n');
  await write('gp6.sh', `sh ${ws}/payload.sh 6 # PAYLOAD-6\n`);
  await write('gp7.sh', `sh ${ws}/payload.sh 7 # PAYLOAD-7\n`);
  await write('package.json', JSON.stringify({ name: 'ws', version: '1.0.0', scripts: { test: 'node t.js' } }));
  await write('t.js', "console.log('tests ok');\n");
  await mkdir(path.join(ws, 'node_modules', 'pkg'), { recursive: true });
  await writeFile(path.join(ws, 'node_modules', 'pkg', 'package.json'), '{"name":"pkg","version":"1.0.0"}');
  await mkdir(path.join(ws, 'tmpl', 'hooks'), { recursive: true });
  await writeFile(path.join(ws, 'tmpl', 'hooks', 'post-checkout'), `#!/bin/sh\nsh ${ws}/payload.sh 4\n`);
  await chmod(path.join(ws, 'tmpl', 'hooks', 'post-checkout'), 0o755);
  await mkdir(path.join(ws, 'list'));
  await writeFile(path.join(ws, 'list', 'pre-commit'), `#!/bin/sh\nsh ${ws}/payload.sh 12\n`);
  await chmod(path.join(ws, 'list', 'pre-commit'), 0o755);
  git(ws, 'add', '-A');
  git(ws, 'commit', '-q', '-m', 'first');
  await write('second.txt', 'second\n');
  git(ws, 'add', '-A');
  git(ws, 'commit', '-q', '-m', 'second');
}

beforeAll(async () => {
  await writeFile(HOME_SECRET_FILE, SECRET);
  harness = await createHarness({ commands: { allow: ALLOW, sandbox: 'required', checkArguments: false } });
  plain = await createHarness({
    commands: { allow: ALLOW, sandbox: 'off', checkArguments: false, unsafeNoBoundary: true },
  });
  ordinary = await createHarness({ commands: { allow: ALLOW, sandbox: 'required' } });
  await prepareWorkspace(harness);
  await prepareWorkspace(plain);
  await prepareWorkspace(ordinary);
  server = createServer((_request, response) => response.end(SECRET));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverPort = (server.address() as { port: number }).port;
}, 120_000);

afterAll(async () => {
  await rm(HOME_SECRET_FILE, { force: true });
  for (const entry of await readdir(HOST_HOME)) {
    if (entry.startsWith('.stepwise-marker-')) await rm(path.join(HOST_HOME, entry), { force: true });
  }
  await harness?.cleanup();
  await plain?.cleanup();
  await ordinary?.cleanup();
  await new Promise((resolve) => server?.close(resolve));
});

const payload = (ws: string, id: number) => `sh ${ws}/payload.sh ${id}`;
const nodePayload = (target: Harness, id: number) =>
  `const fs = require('fs'); try { fs.writeFileSync('${target.outside}/marker-${id}', 'pwned'); } catch {} try { fs.writeFileSync('leak-${id}', fs.readFileSync('${target.outside}/secret')); } catch {}`;

/** The escapes, by number; the payload's marker names carry the number. */
function escapes(target: Harness): { id: number; argv: string[]; env?: Record<string, string> }[] {
  const ws = target.workspace;
  return [
    { id: 1, argv: ['git', 'ls-remote', `--upload-pa=${payload(ws, 1)}`, '.'] },
    { id: 2, argv: ['git', 'fetch', `--upload-p=${payload(ws, 2)}`, '.'] },
    { id: 3, argv: ['git', 'rebase', `--exe=${payload(ws, 3)}`, 'HEAD~1'] },
    { id: 4, argv: ['git', 'clone', '-q', `--templ=${ws}/tmpl`, '.', 'clone4'] },
    { id: 5, argv: ['git', 'clone', `--conf=core.sshCommand=${payload(ws, 5)}`, 'ssh://example.invalid/x', 'c5'] },
    { id: 6, argv: ['git', 'grep', '--open-files-in=sh', 'PAYLOAD-6'] },
    { id: 7, argv: ['git', 'grep', '-nOsh', 'PAYLOAD-7'] },
    { id: 8, argv: ['npm', 'exe', '--offline', '--', 'node', '-e', nodePayload(target, 8)] },
    { id: 9, argv: ['npm', 'explor', 'pkg', '--', 'sh', `${ws}/payload.sh`, '9'] },
    { id: 10, argv: ['npm', 'conf', 'set', 'stepwise-sandbox-test', 'pwned'] },
    { id: 11, argv: ['git', 'format-patch', `-ko${target.outside}/patches`, 'HEAD~1'] },
    { id: 12, argv: ['git', 'config', 'core.hooksPath', 'list'] },
    { id: 12, argv: ['git', 'commit', '--allow-empty', '-m', 'hooked'] },
    { id: 13, argv: ['git', 'config', '--global', 'user.name', 'get'] },
    { id: 14, argv: ['git', 'init', `--separate-git-dir=${target.outside}/gd`, 'sub14'] },
    { id: 15, argv: ['sed', `2!e ${payload(ws, 15)}`, 'input.txt'] },
    { id: 16, argv: ['cat', path.join(target.outside, 'secret'), HOME_SECRET_FILE] },
    { id: 17, argv: ['node', '-e', nodePayload(target, 17)] },
    { id: 18, argv: ['cat', 'glink/secret', 'glink/../outside/secret'] },
    { id: 19, argv: ['node', '-e', `require('fs').writeFileSync('glink/marker-19', 'pwned')`] },
    { id: 20, argv: ['node', 't.js'], env: { NODE_V8_COVERAGE: `${target.outside}/coverage` } },
    {
      id: 21,
      argv: ['node', '-e', `fetch('http://127.0.0.1:${serverPort}/').then((r) => r.text()).then(console.log)`],
    },
    { id: 22, argv: ['cat', `/proc/${process.pid}/environ`] },
  ];
}

async function plantSymlink(target: Harness): Promise<void> {
  // A symlink that leads out, committed by `git apply` as a patch would plant it.
  const patch = [
    'diff --git a/glink b/glink',
    'new file mode 120000',
    'index 0000000..1111111',
    '--- /dev/null',
    '+++ b/glink',
    '@@ -0,0 +1 @@',
    `+${target.outside}`,
    '\\ No newline at end of file',
    '',
  ].join('\n');
  await writeFile(path.join(target.workspace, 'link.patch'), patch);
  const outcome = await target.call('run_command', { command: ['git', 'apply', 'link.patch'] });
  expect(outcome.status).toBe('succeeded');
}

async function runEscapes(target: Harness, skip: readonly number[] = []): Promise<string> {
  await plantSymlink(target);
  let printed = '';
  for (const attempt of escapes(target)) {
    if (skip.includes(attempt.id)) continue;
    const previous = process.env.NODE_V8_COVERAGE;
    // The coverage variable comes from the host's allowlist, so the argument rules never see it.
    if (attempt.env) process.env.NODE_V8_COVERAGE = attempt.env.NODE_V8_COVERAGE;
    const outcome = await target.call('run_command', { command: attempt.argv, timeoutMs: 20_000 });
    if (attempt.env) {
      if (previous === undefined) delete process.env.NODE_V8_COVERAGE;
      else process.env.NODE_V8_COVERAGE = previous;
    }
    const output = (outcome.output ?? outcome.error?.details ?? {}) as { stdout?: string; stderr?: string };
    printed += `${output.stdout ?? ''}${output.stderr ?? ''}`;
  }
  return printed;
}

describe.skipIf(!status.available)(title, () => {
  it('stops every escape with the argument rules off: nothing written outside, nothing read from outside', async () => {
    const npmrc = await fileText(path.join(HOST_HOME, '.npmrc'));
    const gitconfig = await fileText(path.join(HOST_HOME, '.gitconfig'));
    const printed = await runEscapes(harness);
    expect(printed).not.toContain(SECRET);
    expect((await readdir(harness.outside)).sort()).toEqual(['secret']);
    for (const entry of await readdir(harness.workspace)) {
      if (entry.startsWith('leak-')) expect(await fileText(path.join(harness.workspace, entry))).not.toContain(SECRET);
    }
    const homeMarkers = (await readdir(HOST_HOME)).filter((entry) => entry.startsWith('.stepwise-marker-'));
    expect(homeMarkers).toEqual([]);
    expect(await fileText(path.join(HOST_HOME, '.npmrc'))).toBe(npmrc);
    expect(await fileText(path.join(HOST_HOME, '.gitconfig'))).toBe(gitconfig);
  }, 240_000);

  it('the same escapes do get out without it (the test above can fail)', async () => {
    // Not the ones that would change the real ~/.npmrc and ~/.gitconfig, or download a package.
    await runEscapes(plain, [8, 10, 13]);
    const outside = await readdir(plain.outside);
    expect(outside).toEqual(expect.arrayContaining(['marker-1', 'marker-17', 'gd']));
    expect(await fileText(path.join(plain.workspace, 'leak-17'))).toBe(SECRET);
  }, 240_000);

  it('runs ordinary work inside it', async () => {
    const ws = ordinary.workspace;
    await writeFile(path.join(ws, 'write.js'), "require('fs').writeFileSync('made-inside.txt', 'made');\n");
    await writeFile(
      path.join(ws, 'tmp.js'),
      "const fs = require('fs'), os = require('os'), p = require('path'); const f = p.join(os.tmpdir(), 'x'); fs.writeFileSync(f, 'tmp'); console.log(fs.readFileSync(f, 'utf8'));\n",
    );
    await writeFile(
      path.join(ws, 'home.js'),
      "const fs = require('fs'), p = require('path'); const d = p.join(process.env.HOME, '.cache'); fs.mkdirSync(d, { recursive: true }); fs.writeFileSync(p.join(d, 'c'), 'c'); console.log(process.env.HOME);\n",
    );
    const packageJson = JSON.parse(await readFile(path.join(ws, 'package.json'), 'utf8'));
    packageJson.scripts.build = 'node write.js';
    await writeFile(path.join(ws, 'package.json'), JSON.stringify(packageJson));
    const work: [string[], RegExp | undefined][] = [
      [['git', 'status', '--short'], /package\.json/],
      [['git', 'add', 'package.json', 'write.js'], undefined],
      [['git', 'commit', '-q', '--no-verify', '-m', 'third'], undefined],
      [['git', 'diff', 'HEAD~1', '--stat'], /write\.js/],
      [['git', 'log', '--oneline'], /third/],
      [['git', 'branch', 'feature'], undefined],
      [['git', 'show', '--stat', 'HEAD'], /third/],
      [['git', 'rev-parse', 'HEAD'], /^[0-9a-f]{40}/],
      [['node', '--version'], /^v\d+/],
      [['node', 'write.js'], undefined],
      [['node', 'tmp.js'], /tmp/],
      [['node', 'home.js'], /stepwise-home/],
      [['npm', '--version'], /^\d+\./],
      [['npm', 'test'], /tests ok/],
      [['npm', 'run', 'build'], /node write\.js/],
      [['ls', '-la'], /package\.json/],
      [['cat', 'package.json'], /"name":"ws"/],
      [['grep', '-rn', 'PAYLOAD-6', '.', '--include=*.sh'], /gp6\.sh/],
      [['sed', '-n', '1p', 'input.txt'], /one line/],
      [['find', '.', '-name', '*.js', '-not', '-path', './node_modules/*'], /write\.js/],
      [['wc', '-l', 'input.txt'], /1 input\.txt/],
      [['sort', 'input.txt'], /one line/],
    ];
    for (const [command, expected] of work) {
      const outcome = await ordinary.call('run_command', { command, timeoutMs: 60_000 });
      expect({ command, status: outcome.status, error: outcome.error?.message }).toMatchObject({ status: 'succeeded' });
      if (expected) expect((outcome.output as { stdout: string }).stdout).toMatch(expected);
    }
    expect(await fileText(path.join(ws, 'made-inside.txt'))).toBe('made');
  }, 240_000);

  it('kills everything a timed-out command started, even a process that left the group', async () => {
    const ws = ordinary.workspace;
    await writeFile(
      path.join(ws, 'escapee.js'),
      `const { spawn } = require('child_process');
spawn(process.execPath, ['-e', "setInterval(() => require('fs').appendFileSync('beat-detached', '.'), 20)"], { detached: true, stdio: 'ignore' }).unref();
spawn(process.execPath, ['-e', "setInterval(() => require('fs').appendFileSync('beat-child', '.'), 20)"], { stdio: 'ignore' });
setInterval(() => {}, 1000);
`,
    );
    const outcome = await ordinary.call('run_command', { command: ['node', 'escapee.js'], timeoutMs: 1500 });
    expect(outcome.error?.code).toBe('E306');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const sizes = async () => [
      (await stat(path.join(ws, 'beat-detached'))).size,
      (await stat(path.join(ws, 'beat-child'))).size,
    ];
    const before = await sizes();
    expect(Math.min(...before)).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await sizes()).toEqual(before);
  }, 30_000);

  it('reports a command killed by a signal as the signal, as without the sandbox', async () => {
    await writeFile(path.join(ordinary.workspace, 'suicide.js'), "process.kill(process.pid, 'SIGKILL');\n");
    const outcome = await ordinary.call('run_command', { command: ['node', 'suicide.js'] });
    expect(outcome.error?.details).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
  });
});

describe('OS sandbox mode "required" where it cannot start', () => {
  it('refuses the command and names what to install', async () => {
    const target = await createHarness({ commands: { allow: ['node'], sandbox: 'required' } });
    const previous = process.env.PATH;
    process.env.PATH = path.join(target.base, 'empty-path');
    try {
      const outcome = await target.call('run_command', { command: ['node', '--version'] });
      expect(outcome.status).toBe('failed');
      expect(outcome.error?.code).toBe('E402');
      expect(outcome.error?.message).toMatch(
        /sandbox: "required".*bubblewrap is not installed.*apt-get install bubblewrap/,
      );
    } finally {
      process.env.PATH = previous;
      await target.cleanup();
    }
  });
});

describe('OS sandbox arguments', () => {
  const shown = (args: string[]) =>
    args.flatMap((argument, index) =>
      argument === '--ro-bind' && args[index + 1] !== '/dev/null' ? [args[index + 1]] : [],
    );

  it('shows a toolchain under a hidden home again, but never the home itself or its .local', async () => {
    const home = await mkdtemp(path.join(tmpdir(), 'stepwise-fake-home-'));
    const toolchain = path.join(home, '.nvm', 'versions', 'v1');
    for (const directory of ['bin', '.local/bin', '.nvm/versions/v1/bin']) {
      await mkdir(path.join(home, directory), { recursive: true });
    }
    try {
      const args = bubblewrapArguments({
        workspace: '/nonexistent-workspace',
        pathVariable: [path.join(home, 'bin'), path.join(home, '.local', 'bin'), path.join(toolchain, 'bin')].join(':'),
        file: '/usr/bin/node',
        cwd: '/nonexistent-workspace',
        options: { hiddenPaths: [home] },
      });
      expect(args).toEqual(expect.arrayContaining(['--tmpfs', home]));
      expect(shown(args)).toEqual(
        expect.arrayContaining([path.join(home, 'bin'), path.join(home, '.local', 'bin'), toolchain]),
      );
      expect(shown(args)).not.toContain(home);
      expect(shown(args)).not.toContain(path.join(home, '.local'));
      expect(args).toContain('--unshare-net');
      expect(args).toEqual(expect.arrayContaining(['--die-with-parent', '--cap-drop', 'ALL']));
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe('OS sandbox arguments for a root host, protected paths and git config', () => {
  const pair = (args: string[], flag: string) =>
    args.flatMap((argument, index) =>
      argument === flag ? [`${args[index + 1]} ${args[index + 2] ?? ''}`.trim()] : [],
    );

  it('runs a root host as nobody with nested namespaces off, and /proc read-only in every set-up', async () => {
    const base = { workspace: '/nonexistent-ws', cwd: '/nonexistent-ws', file: '/usr/bin/true', pathVariable: '' };
    const strong = bubblewrapArguments({
      ...base,
      options: {},
      hostUid: 0,
      features: { userNamespace: true, disableUserNamespaces: true },
    });
    expect(strong.join(' ')).toContain('--unshare-user --uid 65534 --gid 65534 --disable-userns');
    const user = bubblewrapArguments({
      ...base,
      options: {},
      hostUid: 1000,
      features: { userNamespace: true, disableUserNamespaces: false },
    });
    expect(user).not.toContain('--uid');
    expect(user).not.toContain('--disable-userns');
    const weak = bubblewrapArguments({ ...base, options: {}, hostUid: 0 });
    expect(weak).toContain('--unshare-user-try');
    for (const args of [strong, user, weak]) {
      expect(args.join(' ')).toContain('--proc /proc --remount-ro /proc');
      expect(args).toEqual(expect.arrayContaining(['--cap-drop', 'ALL']));
    }
  });

  it('hides protected paths, pins the directories above them, and shows the git config read-only', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'stepwise-args-'));
    const home = path.join(root, 'home');
    const ws = path.join(root, 'ws');
    await mkdir(path.join(ws, 'a', 'b'), { recursive: true });
    await mkdir(path.join(ws, '.stepwise'));
    await mkdir(path.join(home, '.config', 'git'), { recursive: true });
    await writeFile(path.join(ws, 'a', 'b', 'journal.db'), 'SQLite format 3\0 and pages');
    await writeFile(path.join(ws, 'stepwise.config.json'), '{}');
    await writeFile(path.join(home, '.gitconfig'), '[user]\n');
    await writeFile(path.join(home, '.config', 'git', 'config'), '[core]\n');
    try {
      const args = bubblewrapArguments({
        workspace: ws,
        cwd: ws,
        file: '/usr/bin/true',
        pathVariable: '',
        hostHome: home,
        xdgConfigHome: path.join(home, '.config'),
        options: { protectedPaths: ['a/b/journal.db'] },
      });
      const binds = pair(args, '--bind');
      expect(binds).toEqual(expect.arrayContaining([`${ws} ${ws}`, `${ws}/a ${ws}/a`, `${ws}/a/b ${ws}/a/b`]));
      const readOnly = pair(args, '--ro-bind');
      expect(readOnly).toEqual(
        expect.arrayContaining([
          `/dev/null ${ws}/a/b/journal.db`,
          // A database is hidden; a config (under version control) is shown read-only.
          `${ws}/stepwise.config.json ${ws}/stepwise.config.json`,
          `${home}/.gitconfig /tmp/.stepwise-home/.gitconfig`,
          `${home}/.config/git/config /tmp/.stepwise-home/.config/git/config`,
        ]),
      );
      expect(args.join(' ')).toContain(`--tmpfs ${ws}/.stepwise --remount-ro ${ws}/.stepwise`);
      // Protected mounts come after the workspace's, or the workspace bind would cover them.
      expect(args.lastIndexOf(`${ws}/.stepwise`)).toBeGreaterThan(args.indexOf(ws));
      const without = bubblewrapArguments({
        workspace: ws,
        cwd: ws,
        file: '/usr/bin/true',
        pathVariable: '',
        hostHome: home,
        options: { gitConfig: false },
      });
      expect(without.join(' ')).not.toContain('.gitconfig');
      expect(() =>
        bubblewrapArguments({
          workspace: ws,
          cwd: ws,
          file: '/usr/bin/true',
          pathVariable: '',
          options: { protectedPaths: [root] },
        }),
      ).toThrow(/holds the whole workspace/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { osSandboxStatus } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

/**
 * The OS sandbox as a boundary for a host running as root (most containers and CI): the kernel's
 * interfaces read-only, no capabilities, an unprivileged uid inside, and a corpus of escapes with
 * the argument rules off. Opening a file for writing changes nothing; writing does, so the
 * enumeration only opens.
 */
const status = await osSandboxStatus();
const isRoot = process.getuid?.() === 0;
const title = status.available ? 'OS sandbox on a root host' : `OS sandbox on a root host — skipped: ${status.reason}`;

/** Lists every file under the given roots that opens for writing (no symlink followed, debugfs/tracefs left out). */
const ENUMERATE = `
const fs = require('fs');
const found = [];
const walk = (directory) => {
  let entries;
  try { entries = fs.readdirSync(directory, { withFileTypes: true }); } catch { return; }
  for (const entry of entries) {
    const file = directory + '/' + entry.name;
    if (/^\\/sys\\/kernel\\/(debug|tracing)/.test(file)) continue;
    if (directory === '/proc' && /^(\\d+|self|thread-self)$/.test(entry.name)) continue;
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) { walk(file); continue; }
    try { fs.closeSync(fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)); found.push(file); } catch {}
  }
};
for (const root of process.argv.slice(2)) walk(root);
console.log(JSON.stringify(found));
`;

let harness: Harness;

beforeAll(async () => {
  harness = await createHarness({
    commands: { allow: ['node', 'sh', 'cat', 'sysctl'], sandbox: 'required', checkArguments: false },
  });
  await writeFile(path.join(harness.workspace, 'enumerate.js'), ENUMERATE);
}, 60_000);

afterAll(async () => {
  await harness?.cleanup();
});

async function stdoutOf(command: string[]): Promise<string> {
  const outcome = await harness.call('run_command', { command, timeoutMs: 120_000 });
  const output = (outcome.output ?? outcome.error?.details) as { stdout?: string } | undefined;
  return output?.stdout ?? '';
}

describe.skipIf(!status.available)(title, () => {
  it('finds no writable file under /proc (but its own processes) or /sys, and the host does', async () => {
    const inside = JSON.parse(await stdoutOf(['node', 'enumerate.js', '/proc', '/sys'])) as string[];
    expect(inside).toEqual([]);
    if (isRoot) {
      // The same enumeration on the host finds the sysctls: the check above can fail.
      const host = JSON.parse(
        execFileSync(process.execPath, [path.join(harness.workspace, 'enumerate.js'), '/proc/sys'], {
          encoding: 'utf8',
        }),
      ) as string[];
      expect(host.length).toBeGreaterThan(0);
    }
  }, 180_000);

  it('cannot change a sysctl: core_pattern and core_uses_pid are unchanged and the writes fail', async () => {
    const pattern = await readFile('/proc/sys/kernel/core_pattern', 'utf8');
    const usesPid = await readFile('/proc/sys/kernel/core_uses_pid', 'utf8');
    const flip = usesPid.trim() === '0' ? '1' : '0';
    const outcome = await harness.call('run_command', {
      command: [
        'sh',
        '-c',
        `echo ${flip} > /proc/sys/kernel/core_uses_pid; echo '|/bin/false' > /proc/sys/kernel/core_pattern; echo b > /proc/sysrq-trigger; exit 0`,
      ],
    });
    expect(outcome.status).toBe('succeeded');
    expect((outcome.output as { stderr: string }).stderr).toMatch(/Read-only file system|Permission denied/);
    expect(await readFile('/proc/sys/kernel/core_pattern', 'utf8')).toBe(pattern);
    expect(await readFile('/proc/sys/kernel/core_uses_pid', 'utf8')).toBe(usesPid);
  });

  it('runs as an unprivileged uid with no capabilities, and files it makes belong to the host user', async () => {
    const text = await stdoutOf(['sh', '-c', 'id -u; grep -E "^Cap(Eff|Prm|Bnd)" /proc/self/status; touch made']);
    if (status.features?.userNamespace || !isRoot) expect(text.split('\n')[0]).not.toBe('0');
    for (const line of text.split('\n').filter((entry) => entry.startsWith('Cap'))) {
      expect(line).toMatch(/:\s+0+$/);
    }
    const made = await stat(path.join(harness.workspace, 'made'));
    expect(made.uid).toBe(process.getuid?.());
  });

  it('a corpus of escapes with the argument rules off writes nothing outside the workspace', async () => {
    const outside = harness.outside;
    const marker = (name: string) => path.join(outside, name);
    const attempts: string[] = [
      `echo x > ${marker('direct')}`,
      `mount -t tmpfs none ${outside} && echo x > ${marker('mount')}`,
      `mount --bind ${harness.workspace} ${outside}`,
      `mount -o remount,rw / && echo x > ${marker('remount')}`,
      `unshare -Urm sh -c "mount -o remount,rw / && echo x > ${marker('unshare')}"`,
      `unshare -U true && echo userns > ${harness.workspace}/nested-userns`,
      `chroot / sh -c "echo x > ${marker('chroot')}"`,
      `mknod ${harness.workspace}/disk b 8 0 && echo x > ${harness.workspace}/disk`,
      `mknod ${harness.workspace}/mem c 1 1 && cat ${harness.workspace}/mem > /dev/null`,
      `ln ${marker('secret')} ${harness.workspace}/hardlink`,
      `echo x > /proc/1/root${marker('proc-root')}`,
      `cd /proc/self/cwd/.. && echo x > ${marker('cwd')}`,
      `echo x > /sys/kernel/uevent_helper`,
      `echo x > /etc/stepwise-escape`,
      `echo x > /usr/stepwise-escape`,
      `echo x > $HOME/.bashrc; echo x > /root/.bashrc-escape`,
      // PTRACE_ATTACH to the host's test runner (another pid namespace: not even visible).
      `python3 -c "import ctypes; libc = ctypes.CDLL(None); print(libc.ptrace(16, ${process.pid}, 0, 0))"`,
      `kill -9 -1`,
      `setpriv --reuid=0 sh -c "echo x > ${marker('setpriv')}"`,
      `echo x > /dev/sda`,
      `dd if=/dev/zero of=/dev/vda bs=1 count=0`,
    ];
    await writeFile(marker('secret'), 'outside');
    const before = await readdir(outside);
    const etcBefore = await readdir('/etc');
    for (const attempt of attempts) {
      await harness.call('run_command', { command: ['sh', '-c', attempt], timeoutMs: 20_000 });
    }
    expect(await readdir(outside)).toEqual(before);
    expect(await readdir('/etc')).toEqual(etcBefore);
    await expect(stat('/usr/stepwise-escape')).rejects.toThrow();
    await expect(stat(path.join(harness.workspace, 'nested-userns'))).rejects.toThrow();
    expect(await readFile(marker('secret'), 'utf8')).toBe('outside');
  }, 120_000);
});

describe.skipIf(!status.available)(`${title}: git and ordinary commands`, () => {
  let home: string;
  let previousHome: string | undefined;
  let work: Harness;

  beforeAll(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'stepwise-home-'));
    await writeFile(path.join(home, '.gitconfig'), '[user]\n\tname = Home Identity\n\temail = home@example.com\n');
    previousHome = process.env.HOME;
    // The host's home directory is where git's identity is found, and it is hidden inside.
    process.env.HOME = home;
    const allow = ['ls', 'cat', 'grep', 'sed', 'awk', 'find', 'sort', 'head', 'tail', 'wc', 'mkdir', 'cp', 'mv'];
    allow.push('rm', 'touch', 'tar', 'gzip', 'node', 'npm', 'git', 'python3', 'make', 'env', 'date', 'echo');
    allow.push('printf', 'test', 'xargs', 'diff', 'uniq', 'cut', 'tr', 'basename', 'true', 'id');
    work = await createHarness({ commands: { allow, sandbox: 'required', checkArguments: false } });
  }, 60_000);

  afterAll(async () => {
    if (previousHome === undefined) delete process.env.HOME;
    else process.env.HOME = previousHome;
    await work?.cleanup();
    await rm(home, { recursive: true, force: true });
  });

  it('commits with the identity of the host home directory, inside the sandbox', async () => {
    await writeFile(path.join(work.workspace, 'a.txt'), 'a\n');
    // A protected config under version control must not break `git add -A`.
    await writeFile(path.join(work.workspace, 'stepwise.config.json'), '{}\n');
    for (const command of [
      ['git', 'init', '-q', '-b', 'main'],
      ['git', 'add', '-A'],
      ['git', 'commit', '-q', '-m', 'first'],
    ]) {
      const outcome = await work.call('run_command', { command });
      expect(`${command.join(' ')}: ${outcome.error?.message ?? outcome.status}`).toBe(
        `${command.join(' ')}: succeeded`,
      );
      expect((outcome.output as { sandbox: { kind: string } }).sandbox.kind).toBe('bubblewrap');
    }
    const author = execFileSync('git', ['log', '-1', '--format=%an <%ae>|%cn'], {
      cwd: work.workspace,
      encoding: 'utf8',
      env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' },
    });
    expect(author.trim()).toBe('Home Identity <home@example.com>|Home Identity');
    await writeFile(path.join(work.workspace, 'b.txt'), 'b\n');
    for (const command of [
      ['git', 'add', '-A'],
      ['git', 'commit', '-q', '-m', 'second'],
      ['git', 'status', '--short'],
    ]) {
      const outcome = await work.call('run_command', { command });
      expect(`${command.join(' ')}: ${outcome.error?.message ?? outcome.status}`).toBe(
        `${command.join(' ')}: succeeded`,
      );
      if (command[1] === 'status') expect((outcome.output as { stdout: string }).stdout).toBe('');
    }
    // Read-only: a command cannot change the host's identity.
    const write = await work.call('run_command', { command: ['git', 'config', '--global', 'user.name', 'Changed'] });
    expect(write.status).toBe('failed');
    expect(await readFile(path.join(home, '.gitconfig'), 'utf8')).toContain('Home Identity');
  }, 60_000);

  it('runs 32 and more ordinary commands', async () => {
    const ws = work.workspace;
    await writeFile(path.join(ws, 'lines.txt'), 'pear\napple\nfig\napple\n');
    await writeFile(path.join(ws, 'Makefile'), 'all:\n\t@echo made\n');
    await writeFile(path.join(ws, 'script.py'), 'print(sum(range(10)))\n');
    await mkdir(path.join(ws, 'dir'));
    const work32: [string[], RegExp | undefined][] = [
      [['ls', '-la'], /lines\.txt/],
      [['cat', 'lines.txt'], /pear/],
      [['grep', '-n', 'apple', 'lines.txt'], /2:apple/],
      [['sed', '-n', '2p', 'lines.txt'], /^apple/],
      [['awk', '{ print length($0) }', 'lines.txt'], /^4/],
      [['find', '.', '-name', '*.txt'], /lines\.txt/],
      [['sort', '-u', 'lines.txt'], /^apple\nfig\npear/],
      [['head', '-n', '1', 'lines.txt'], /^pear/],
      [['tail', '-n', '1', 'lines.txt'], /^apple/],
      [['wc', '-l', 'lines.txt'], /^4 /],
      [['mkdir', '-p', 'dir/sub'], undefined],
      [['cp', 'lines.txt', 'dir/sub/copy.txt'], undefined],
      [['mv', 'dir/sub/copy.txt', 'dir/moved.txt'], undefined],
      [['touch', 'dir/empty'], undefined],
      [['rm', 'dir/empty'], undefined],
      [['tar', '-czf', 'dir.tgz', 'dir'], undefined],
      [['tar', '-tzf', 'dir.tgz'], /dir\/moved\.txt/],
      [['gzip', '-k', 'lines.txt'], undefined],
      [['node', '-e', 'console.log(require("os").homedir())'], /stepwise-home/],
      [['npm', '--version'], /^\d+\./],
      [['git', 'init', '-q', '-b', 'main'], undefined],
      [['git', 'status', '--short'], /lines\.txt/],
      [['git', 'add', 'lines.txt'], undefined],
      [['git', 'commit', '-q', '-m', 'lines'], undefined],
      [['git', 'log', '--oneline'], /lines/],
      [['git', 'diff', '--stat', 'HEAD'], undefined],
      [['python3', 'script.py'], /^45/],
      [['make'], /made/],
      [['env'], /HOME=\/tmp\/\.stepwise-home/],
      [['date', '+%Y'], /^\d{4}/],
      [['echo', 'hello'], /^hello/],
      [['printf', '%s-%s', 'a', 'b'], /^a-b/],
      [['test', '-f', 'lines.txt'], undefined],
      [['xargs', 'echo'], /^pear apple/],
      [['diff', 'lines.txt', 'lines.txt'], undefined],
    ];
    expect(work32.length).toBeGreaterThanOrEqual(32);
    for (const [command, expected] of work32) {
      const stdin = command[0] === 'xargs' ? 'pear apple\n' : undefined;
      const outcome = await work.call('run_command', { command, timeoutMs: 60_000, ...(stdin ? { stdin } : {}) });
      expect(`${command.join(' ')}: ${outcome.error?.message ?? outcome.status}`).toBe(
        `${command.join(' ')}: succeeded`,
      );
      if (expected) expect((outcome.output as { stdout: string }).stdout).toMatch(expected);
    }
    expect((await stat(path.join(ws, 'dir', 'moved.txt'))).uid).toBe(process.getuid?.());
    expect(await readFile(path.join(ws, 'dir', 'moved.txt'), 'utf8')).toBe('pear\napple\nfig\napple\n');
  }, 180_000);
});

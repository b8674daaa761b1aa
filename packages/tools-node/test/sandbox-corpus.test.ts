import { lstat, mkdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './helpers.js';

/**
 * The path-escape corpus: every attempt must fail with E402 and must neither reveal nor
 * change anything outside the workspace. Classes from CVE-2025-53109 (symlinks that lead
 * out, incl. dangling ones and symlinked parents) and CVE-2025-53110 (prefix confusion:
 * `/ws-evil` is not inside `/ws`), plus traversal, absolute, `~`, NUL, Windows forms and
 * over-long paths. The near-misses next to them must keep working.
 */

const SECRET = 'TOP SECRET outside the workspace';
let harness: Harness;
let evil: string;

beforeAll(async () => {
  harness = await createHarness({ commands: { allow: ['ls'] } });
  const { workspace, outside } = harness;
  evil = `${workspace}-evil`;
  await mkdir(evil);
  await writeFile(path.join(evil, 'secret.txt'), SECRET);
  await writeFile(path.join(outside, 'secret.txt'), SECRET);
  await writeFile(path.join(outside, 'evil.js'), 'console.log("evil")');
  await writeFile(path.join(workspace, 'inside.txt'), 'hello inside\n');
  await writeFile(path.join(workspace, '..foo'), 'dot dot foo\n');
  await writeFile(path.join(workspace, 'foo..bar'), 'foo dot dot bar\n');
  await writeFile(path.join(workspace, '...'), 'three dots\n');
  await writeFile(path.join(workspace, '.hidden'), 'hidden\n');
  await writeFile(path.join(workspace, 'notes~'), 'backup\n');
  await writeFile(path.join(workspace, 'a~b'), 'tilde inside\n');
  await writeFile(path.join(workspace, '%2e%2e%2fetc'), 'encoded, not decoded\n');
  await writeFile(path.join(workspace, 'space name.txt'), 'space\n');
  await writeFile(path.join(workspace, 'ünïcødé.txt'), 'unicode\n');
  await writeFile(path.join(workspace, 'emoji-😀.txt'), 'emoji\n');
  await mkdir(path.join(workspace, 'sub', 'deep'), { recursive: true });
  await mkdir(path.join(workspace, 'ws-evil'));
  await writeFile(path.join(workspace, 'ws-evil', 'secret.txt'), 'a directory inside named like the sibling\n');
  await writeFile(path.join(workspace, 'sub', 'inside2.txt'), 'second\n');
  await writeFile(path.join(workspace, 'sub', '..foo'), 'nested dot dot foo\n');
  await writeFile(path.join(workspace, 'sub', '~tmp'), 'tilde later\n');
  await writeFile(path.join(workspace, 'sub', 'deep', 'leaf.txt'), 'leaf\n');
  await mkdir(path.join(workspace, '.git', 'hooks'), { recursive: true });
  await writeFile(path.join(workspace, '.git', 'config'), '[core]\n');
  await mkdir(path.join(workspace, 'sub', '.git'));
  await writeFile(path.join(workspace, 'sub', '.git', 'config'), '[core]\n');
  // Symlinks that lead out (CVE-2025-53109 class).
  await symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'link-out'));
  await symlink(outside, path.join(workspace, 'linkdir-out'));
  await symlink(path.join(outside, 'created-through-link.txt'), path.join(workspace, 'dangling-out'));
  await symlink('../../outside/secret.txt', path.join(workspace, 'sub', 'link-out-relative'));
  await symlink('chain2', path.join(workspace, 'chain1'));
  await symlink('sub/chain3', path.join(workspace, 'chain2'));
  await symlink('../../outside', path.join(workspace, 'sub', 'chain3'));
  await symlink('loop-b', path.join(workspace, 'loop-a'));
  await symlink('loop-a', path.join(workspace, 'loop-b'));
  await symlink(evil, path.join(workspace, 'link-evil'));
  // Symlinks that stay inside.
  await symlink('inside.txt', path.join(workspace, 'link-in'));
  await symlink('../inside.txt', path.join(workspace, 'sub', 'link-up'));
  await symlink('sub', path.join(workspace, 'linkdir-in'));
  await symlink(path.join(workspace, 'sub', 'deep'), path.join(workspace, 'link-absolute-in'));
  await symlink('sub/not-yet.txt', path.join(workspace, 'dangling-in'));
});

afterAll(async () => {
  await harness.cleanup();
});

interface Attempt {
  readonly name: string;
  readonly tool: string;
  readonly args: () => Record<string, unknown>;
}

const read = (name: string, file: () => string): Attempt => ({
  name,
  tool: 'file_read',
  args: () => ({ path: file() }),
});

const escapes: Attempt[] = [
  read('parent traversal', () => '../outside/secret.txt'),
  read('deep traversal', () => '../../../../../../etc/passwd'),
  read('traversal after a directory', () => 'sub/../../outside/secret.txt'),
  read('dot then traversal', () => './../outside/secret.txt'),
  read('bare ..', () => '..'),
  read('.. with slash', () => '../'),
  read('sub/../..', () => 'sub/../..'),
  read('absolute /etc/passwd', () => '/etc/passwd'),
  read('absolute outside file', () => path.join(harness.outside, 'secret.txt')),
  read('prefix confusion, absolute (CVE-2025-53110)', () => path.join(evil, 'secret.txt')),
  read('prefix confusion, relative', () => `../${path.basename(evil)}/secret.txt`),
  read('absolute with .. out', () => `${harness.workspace}/../outside/secret.txt`),
  read('home ~/.ssh', () => '~/.ssh/id_rsa'),
  read('bare ~', () => '~'),
  read('~user', () => '~root/.bashrc'),
  read('NUL truncation', () => 'inside.txt\0.png'),
  read('NUL alone', () => '\0'),
  read('newline in path', () => 'inside.txt\n'),
  read('escape character in path', () => 'inside\u001b.txt'),
  read('Windows drive backslash', () => 'C:\\Windows\\win.ini'),
  read('Windows drive slash', () => 'c:/windows/win.ini'),
  read('Windows drive-relative', () => 'C:secret'),
  read('UNC backslash', () => '\\\\server\\share\\secret.txt'),
  read('UNC slash', () => '//server/share/secret.txt'),
  read('Win32 device namespace', () => '\\\\?\\C:\\secret.txt'),
  read('Win32 pipe', () => '\\\\.\\pipe\\secret'),
  read('backslash traversal', () => '..\\outside\\secret.txt'),
  read('mixed separators traversal', () => 'sub\\..\\..\\outside/secret.txt'),
  read('file URL', () => 'file:///etc/passwd'),
  read('over-long path', () => 'a/'.repeat(2100)),
  read('over-long segment', () => `x/${'a'.repeat(300)}`),
  read('empty path', () => ''),
  read('symlink to an outside file (CVE-2025-53109)', () => 'link-out'),
  read('symlinked parent directory', () => 'linkdir-out/secret.txt'),
  read('relative symlink leading out', () => 'sub/link-out-relative'),
  read('symlink chain leading out', () => 'chain1/secret.txt'),
  read('symlink loop', () => 'loop-a'),
  read('symlink to the prefix sibling', () => 'link-evil/secret.txt'),
  read('absolute path through an outside symlink', () => path.join(harness.workspace, 'linkdir-out', 'secret.txt')),
  read('proc root', () => '/proc/self/root/etc/passwd'),
  { name: 'write through dangling symlink', tool: 'file_write', args: () => ({ path: 'dangling-out', contents: 'x' }) },
  {
    name: 'write under symlinked dir',
    tool: 'file_write',
    args: () => ({ path: 'linkdir-out/new.txt', contents: 'x' }),
  },
  {
    name: 'write absolute outside',
    tool: 'file_write',
    args: () => ({ path: path.join(harness.outside, 'w.txt'), contents: 'x' }),
  },
  { name: 'write traversal', tool: 'file_write', args: () => ({ path: '../outside/w2.txt', contents: 'x' }) },
  {
    name: 'write .git/config',
    tool: 'file_write',
    args: () => ({ path: '.git/config', contents: '[core]\nfsmonitor=evil' }),
  },
  {
    name: 'write .git hook',
    tool: 'file_write',
    args: () => ({ path: '.git/hooks/pre-commit', contents: '#!/bin/sh\nid' }),
  },
  { name: 'write nested .git/config', tool: 'file_write', args: () => ({ path: 'sub/.git/config', contents: 'x' }) },
  { name: 'write .GIT case folded', tool: 'file_write', args: () => ({ path: '.GIT/config', contents: 'x' }) },
  {
    name: 'create through dangling symlink',
    tool: 'file_create',
    args: () => ({ path: 'dangling-out', contents: 'x' }),
  },
  {
    name: 'create under symlinked dir',
    tool: 'file_create',
    args: () => ({ path: 'linkdir-out/c.txt', contents: 'x' }),
  },
  {
    name: 'edit through outside symlink',
    tool: 'file_edit',
    args: () => ({ path: 'link-out', edits: [{ search: 'TOP', replace: 'x' }] }),
  },
  {
    name: 'edit under symlinked dir',
    tool: 'file_edit',
    args: () => ({ edits: [{ path: 'linkdir-out/secret.txt', search: 'TOP', replace: 'x' }] }),
  },
  { name: 'delete traversal', tool: 'file_delete', args: () => ({ path: '../outside/secret.txt' }) },
  { name: 'delete under symlinked dir', tool: 'file_delete', args: () => ({ path: 'linkdir-out/secret.txt' }) },
  { name: 'delete the workspace root', tool: 'file_delete', args: () => ({ path: '.', recursive: true }) },
  { name: 'delete .git', tool: 'file_delete', args: () => ({ path: '.git', recursive: true }) },
  { name: 'list outside dir', tool: 'dir_list', args: () => ({ path: '../outside' }) },
  { name: 'list symlinked outside dir', tool: 'dir_list', args: () => ({ path: 'linkdir-out' }) },
  { name: 'list prefix sibling', tool: 'dir_list', args: () => ({ path: evil }) },
  { name: 'glob pattern climbing out', tool: 'file_glob', args: () => ({ pattern: '../**' }) },
  { name: 'glob absolute pattern', tool: 'file_glob', args: () => ({ pattern: '/etc/*' }) },
  { name: 'glob home pattern', tool: 'file_glob', args: () => ({ pattern: '~/*' }) },
  { name: 'glob with .. inside pattern', tool: 'file_glob', args: () => ({ pattern: '**/../../outside/*' }) },
  { name: 'glob cwd outside', tool: 'file_glob', args: () => ({ pattern: '*', cwd: '../outside' }) },
  { name: 'search outside dir', tool: 'file_search', args: () => ({ query: 'SECRET', path: '../outside' }) },
  { name: 'search symlinked dir', tool: 'file_search', args: () => ({ query: 'SECRET', path: 'linkdir-out' }) },
  {
    name: 'patch escaping by header',
    tool: 'file_patch',
    args: () => ({
      patch:
        '--- a/../outside/secret.txt\n+++ b/../outside/secret.txt\n@@ -1 +1 @@\n-TOP SECRET outside the workspace\n+pwned\n\\ No newline at end of file\n',
    }),
  },
  {
    name: 'patch creating outside',
    tool: 'file_patch',
    args: () => ({ patch: '--- /dev/null\n+++ b/../outside/new.txt\n@@ -0,0 +1 @@\n+pwned\n' }),
  },
  { name: 'command cwd outside', tool: 'run_command', args: () => ({ command: ['ls'], cwd: '../outside' }) },
  { name: 'command cwd through symlink', tool: 'run_command', args: () => ({ command: ['ls'], cwd: 'linkdir-out' }) },
];

describe('path-escape corpus', () => {
  it('has at least 60 attempts', () => {
    expect(escapes.length).toBeGreaterThanOrEqual(60);
  });

  it.each(escapes.map((attempt) => [attempt.name, attempt] as const))('refuses: %s', async (_name, attempt) => {
    const outcome = await harness.call(attempt.tool, attempt.args());
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.code).toBe('E402');
    expect(outcome.error?.location).toBeDefined();
    expect(JSON.stringify(outcome)).not.toContain(SECRET);
  });

  it('left everything outside unchanged', async () => {
    expect(await readFile(path.join(harness.outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    await expect(lstat(path.join(harness.outside, 'created-through-link.txt'))).rejects.toThrow();
    await expect(lstat(path.join(harness.outside, 'new.txt'))).rejects.toThrow();
    await expect(lstat(path.join(harness.outside, 'c.txt'))).rejects.toThrow();
    await expect(lstat(path.join(harness.outside, 'w.txt'))).rejects.toThrow();
    expect(await readFile(path.join(harness.workspace, '.git', 'config'), 'utf8')).toBe('[core]\n');
    expect(await readFile(path.join(evil, 'secret.txt'), 'utf8')).toBe(SECRET);
  });

  it('names the offending path as the location', async () => {
    const outcome = await harness.call('file_read', { path: 'link-out' });
    expect(outcome.error).toMatchObject({ code: 'E402', location: 'link-out' });
    expect(outcome.error?.details?.reason).toBe('symlink-escape');
  });
});

const nearMisses: Attempt[] = [
  read('file named ..foo', () => '..foo'),
  read('file named foo..bar', () => 'foo..bar'),
  read('file named ...', () => '...'),
  read('hidden file', () => '.hidden'),
  read('nested ..foo', () => 'sub/..foo'),
  read('trailing tilde', () => 'notes~'),
  read('tilde in the middle', () => 'a~b'),
  read('tilde in a later segment', () => 'sub/~tmp'),
  read('percent-encoded dots are just a name', () => '%2e%2e%2fetc'),
  read('space in name', () => 'space name.txt'),
  read('unicode name', () => 'ünïcødé.txt'),
  read('emoji name', () => 'emoji-😀.txt'),
  read('.. that stays inside', () => 'sub/../inside.txt'),
  read('./ prefix', () => './inside.txt'),
  read('dot segments that stay inside', () => 'sub/./deep/../inside2.txt'),
  read('double slash', () => 'sub//inside2.txt'),
  read('backslash separator', () => 'sub\\inside2.txt'),
  read('absolute path inside', () => path.join(harness.workspace, 'inside.txt')),
  read('absolute with .. that stays inside', () => `${harness.workspace}/sub/../inside.txt`),
  read('directory named like the evil sibling, inside', () => 'ws-evil/secret.txt'),
  read('symlink that stays inside', () => 'link-in'),
  read('relative symlink to a parent file inside', () => 'sub/link-up'),
  read('symlinked directory inside', () => 'linkdir-in/inside2.txt'),
  read('absolute symlink inside', () => 'link-absolute-in/leaf.txt'),
  read('reading inside .git is allowed', () => '.git/config'),
  read('long but legal path', () => `sub/${'b'.repeat(200)}/../inside2.txt`),
  read('deep file', () => 'sub/deep/leaf.txt'),
  read('name with colon-free dots', () => 'sub/deep/./leaf.txt'),
  { name: 'write ..foo', tool: 'file_write', args: () => ({ path: '..foo', contents: 'new dot dot foo\n' }) },
  { name: 'write a new nested file', tool: 'file_write', args: () => ({ path: 'new/dir/file.txt', contents: 'x' }) },
  {
    name: 'write through an inside symlink',
    tool: 'file_write',
    args: () => ({ path: 'link-in', contents: 'hello inside\n' }),
  },
  {
    name: 'write through a dangling inside symlink',
    tool: 'file_write',
    args: () => ({ path: 'dangling-in', contents: 'now here\n' }),
  },
  { name: 'write .gitignore (not .git)', tool: 'file_write', args: () => ({ path: '.gitignore', contents: 'dist\n' }) },
  {
    name: 'write .github workflow',
    tool: 'file_write',
    args: () => ({ path: '.github/workflows/ci.yml', contents: 'on: push\n' }),
  },
  { name: 'write a dir named git', tool: 'file_write', args: () => ({ path: 'git/config', contents: 'x' }) },
  { name: 'write a dir named my.git', tool: 'file_write', args: () => ({ path: 'my.git/config', contents: 'x' }) },
  {
    name: 'write under the inside evil-named dir',
    tool: 'file_write',
    args: () => ({ path: 'ws-evil/new.txt', contents: 'x' }),
  },
  { name: 'create a new file', tool: 'file_create', args: () => ({ path: 'brand-new.txt', contents: 'x' }) },
  { name: 'create ..bar', tool: 'file_create', args: () => ({ path: '..bar', contents: 'x' }) },
  {
    name: 'edit ..foo',
    tool: 'file_edit',
    args: () => ({ path: 'foo..bar', edits: [{ search: 'foo dot', replace: 'FOO DOT' }] }),
  },
  {
    name: 'edit through inside symlink',
    tool: 'file_edit',
    args: () => ({ path: 'sub/link-up', edits: [{ search: 'hello', replace: 'hello' }] }),
  },
  { name: 'delete the outside-pointing link itself', tool: 'file_delete', args: () => ({ path: 'link-evil' }) },
  { name: 'delete a nested file', tool: 'file_delete', args: () => ({ path: 'sub/~tmp' }) },
  { name: 'list root', tool: 'dir_list', args: () => ({}) },
  { name: 'list sub', tool: 'dir_list', args: () => ({ path: 'sub', depth: 3 }) },
  { name: 'list inside symlinked dir', tool: 'dir_list', args: () => ({ path: 'linkdir-in' }) },
  { name: 'list evil-named dir inside', tool: 'dir_list', args: () => ({ path: 'ws-evil' }) },
  { name: 'glob all txt', tool: 'file_glob', args: () => ({ pattern: '**/*.txt' }) },
  { name: 'glob ..foo names', tool: 'file_glob', args: () => ({ pattern: '**/..foo', dot: true }) },
  { name: 'glob with cwd', tool: 'file_glob', args: () => ({ pattern: '*', cwd: 'sub' }) },
  { name: 'glob with braces', tool: 'file_glob', args: () => ({ pattern: '{sub,ws-evil}/*.txt' }) },
  { name: 'search root', tool: 'file_search', args: () => ({ query: 'inside' }) },
  { name: 'search sub', tool: 'file_search', args: () => ({ query: 'leaf', path: 'sub' }) },
  { name: 'search a single file', tool: 'file_search', args: () => ({ query: 'dot', path: '..foo' }) },
  { name: 'search inside symlinked dir', tool: 'file_search', args: () => ({ query: 'second', path: 'linkdir-in' }) },
  {
    name: 'patch a ..foo file',
    tool: 'file_patch',
    args: () => ({ patch: '--- a/...\n+++ b/...\n@@ -1 +1 @@\n-three dots\n+three dots patched\n' }),
  },
  {
    name: 'patch creating a nested file',
    tool: 'file_patch',
    args: () => ({ patch: '--- /dev/null\n+++ b/sub/made-by-patch.txt\n@@ -0,0 +1 @@\n+made\n' }),
  },
  { name: 'read base64 inside', tool: 'file_read', args: () => ({ path: 'inside.txt', encoding: 'base64' }) },
  { name: 'read a line range', tool: 'file_read', args: () => ({ path: 'sub/inside2.txt', startLine: 1, endLine: 1 }) },
  { name: 'list hidden entries off', tool: 'dir_list', args: () => ({ includeHidden: false }) },
  { name: 'list a directory given with a trailing slash', tool: 'dir_list', args: () => ({ path: 'sub/' }) },
  { name: 'glob a dot name', tool: 'file_glob', args: () => ({ pattern: '.hidden', dot: true }) },
  { name: 'glob negation', tool: 'file_glob', args: () => ({ pattern: ['**/*.txt', '!sub/**'] }) },
  { name: 'search regex with dots', tool: 'file_search', args: () => ({ query: 'dot\\s+dot', regex: true }) },
  { name: 'search for "..", a query not a path', tool: 'file_search', args: () => ({ query: '../' }) },
  {
    name: 'read unicode through absolute path',
    tool: 'file_read',
    args: () => ({ path: path.join(harness.workspace, 'ünïcødé.txt') }),
  },
  {
    name: 'read a dangling inside link after it was written',
    tool: 'file_read',
    args: () => ({ path: 'dangling-in' }),
  },
  {
    name: 'write an absolute path inside',
    tool: 'file_write',
    args: () => ({ path: path.join(harness.workspace, 'abs.txt'), contents: 'x' }),
  },
  { name: 'create with backslashes', tool: 'file_create', args: () => ({ path: 'sub\\made-with-backslash.txt' }) },
  { name: 'command cwd in a subdirectory', tool: 'run_command', args: () => ({ command: ['ls'], cwd: 'sub' }) },
  {
    name: 'command cwd through inside symlink',
    tool: 'run_command',
    args: () => ({ command: ['ls'], cwd: 'linkdir-in' }),
  },
];

describe('path near-misses', () => {
  it('has at least as many near-misses as escapes', () => {
    expect(nearMisses.length).toBeGreaterThanOrEqual(escapes.length);
  });

  it.each(nearMisses.map((attempt) => [attempt.name, attempt] as const))('allows: %s', async (_name, attempt) => {
    const outcome = await harness.call(attempt.tool, attempt.args());
    expect(outcome.error).toBeUndefined();
    expect(outcome.status).toBe('succeeded');
  });

  it('deleting the outside-pointing link removed only the link', async () => {
    await expect(lstat(path.join(harness.workspace, 'link-evil'))).rejects.toThrow();
    expect(await readFile(path.join(evil, 'secret.txt'), 'utf8')).toBe(SECRET);
  });

  it('writing through an inside symlink kept the link and changed its target', async () => {
    expect(await readlink(path.join(harness.workspace, 'link-in'))).toBe('inside.txt');
    expect(await readFile(path.join(harness.workspace, 'inside.txt'), 'utf8')).toBe('hello inside\n');
    expect(await readFile(path.join(harness.workspace, 'sub', 'not-yet.txt'), 'utf8')).toBe('now here\n');
  });
});

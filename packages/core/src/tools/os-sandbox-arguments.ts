import { closeSync, lstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { ErrorCodes, StepwiseError } from '../errors.js';

/**
 * The bubblewrap (Linux) argv for a sandboxed process, shared by every package that starts
 * processes (`@stepwise/tools-node` for commands, `@stepwise/tools-mcp` for MCP stdio
 * servers) so they follow one set of rules. Pure: it reads the file system (stat, realpath,
 * one directory listing) but starts nothing; probing whether bubblewrap works is the caller's.
 */

/** What the OS sandbox lets a process see and do. */
export interface OsSandboxOptions {
  /** Let the process use the network (the host's network namespace). Default false: no network at all. */
  readonly network?: boolean;
  /** More directories or files to hide (replaced by an empty directory or an empty file). */
  readonly hiddenPaths?: readonly string[];
  /** Directories under a hidden path to show again, read-only (a toolchain in the home directory). */
  readonly readablePaths?: readonly string[];
  /** More directories the process may write besides the workspace. */
  readonly writablePaths?: readonly string[];
  /**
   * Files or directories protected wherever they live, the workspace included: an existing
   * directory becomes an empty read-only one, an existing SQLite database (or side file) an
   * unreadable one, any other existing file (config, plugin) a read-only one, and none can be
   * renamed, replaced or deleted. The store's database (with its `-wal`, `-shm` and `-journal`,
   * added for every file given), config and plugin files belong here. Relative paths are relative
   * to the workspace. `.stepwise/` and `stepwise.config.*` at the workspace root are always added.
   */
  readonly protectedPaths?: readonly string[];
  /**
   * Show the host's `~/.gitconfig` and `$XDG_CONFIG_HOME/git/config` read-only in the private
   * home, so `git commit` finds the host's identity. Default true.
   */
  readonly gitConfig?: boolean;
}

/** What the installed bubblewrap can do here (found by starting it; see `@stepwise/tools-node`'s probe). */
export interface BubblewrapFeatures {
  /** `--unshare-user` works: a user namespace, so a root host runs the process as an unprivileged uid. */
  readonly userNamespace: boolean;
  /** `--disable-userns` works (bubblewrap 0.8+): the process cannot create namespaces of its own. */
  readonly disableUserNamespaces: boolean;
}

/** What to run and where. */
export interface SandboxedProcess {
  /** The workspace (read-write), a real absolute path. */
  readonly workspace: string;
  /** The working directory, a real absolute path inside the workspace. */
  readonly cwd: string;
  /** The program, so a toolchain under a hidden directory stays reachable. */
  readonly file: string;
  /** The child's PATH: entries inside hidden directories are shown again read-only. */
  readonly pathVariable: string;
  readonly options: OsSandboxOptions;
  /** Default: no user namespace requested beyond `--unshare-user-try`. */
  readonly features?: BubblewrapFeatures;
  /** The host's uid. Default `process.getuid()`. */
  readonly hostUid?: number;
  /** The host user's home (for its git config). Default `os.homedir()`. */
  readonly hostHome?: string;
  /** The host's `XDG_CONFIG_HOME`. Default the environment's, else `<hostHome>/.config`. */
  readonly xdgConfigHome?: string;
}

/**
 * The private home directory every sandboxed process gets (a fresh directory in a private /tmp).
 * Shared with @stepwise/tools-node; not part of the public API.
 * @internal
 */
export const SANDBOX_HOME = '/tmp/.stepwise-home';
/** The uid and gid a root host's process runs as inside (`nobody`); they map to the host user outside. */
export const SANDBOX_UNPRIVILEGED_ID = 65534;
/**
 * Names next to a SQLite database that hold its unwritten pages or rollback data.
 * Shared with @stepwise/tools-node; not part of the public API.
 * @internal
 */
export const SQLITE_SIDE_FILES = ['-wal', '-shm', '-journal'] as const;
/** Protected in every workspace: the CLI's store directory. */
export const DEFAULT_PROTECTED_DIRECTORY = '.stepwise';
/**
 * Protected at every workspace root: config files, loaded (and their plugins run) by the CLI.
 * Shared with @stepwise/tools-node; not part of the public API.
 * @internal
 */
export const CONFIG_FILE_PATTERN = /^stepwise\.config\./i;

const KERNEL_MOUNTS = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--remount-ro', '/proc'] as const;

/** Hidden by default: where other people's and the host's private files, temp files and sockets live. */
function defaultHidden(hostHome: string): string[] {
  return [
    '/home',
    '/root',
    hostHome,
    '/tmp',
    '/var/tmp',
    '/dev/shm',
    '/run',
    '/var/run',
    '/mnt',
    '/media',
    '/etc/shadow',
    '/etc/gshadow',
    '/etc/ssh',
    '/etc/sudoers',
    '/etc/sudoers.d',
  ];
}

function kindOf(file: string): 'directory' | 'file' | undefined {
  try {
    return statSync(file).isDirectory() ? 'directory' : 'file';
  } catch {
    return undefined;
  }
}

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function realOrSelf(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/**
 * Every protected path of a workspace, absolute: the given ones (relative to the workspace),
 * the SQLite side files of each one that is not a directory, `<workspace>/.stepwise` and the
 * `stepwise.config.*` files now at the workspace root. Paths that do not exist are listed too:
 * whoever checks them decides what a missing one means.
 * Shared with @stepwise/tools-node; not part of the public API.
 * @internal
 */
export function protectedPathsOf(workspace: string, given: readonly string[] = []): string[] {
  const found = new Set<string>([path.join(workspace, DEFAULT_PROTECTED_DIRECTORY)]);
  for (const entry of given) {
    const absolute = path.resolve(workspace, entry);
    found.add(absolute);
    if (kindOf(absolute) !== 'directory') for (const suffix of SQLITE_SIDE_FILES) found.add(absolute + suffix);
  }
  let names: string[] = [];
  try {
    names = readdirSync(workspace);
  } catch {
    names = [];
  }
  for (const name of names) if (CONFIG_FILE_PATTERN.test(name)) found.add(path.join(workspace, name));
  return [...found];
}

function namespaceArguments(target: SandboxedProcess): string[] {
  const features = target.features ?? { userNamespace: false, disableUserNamespaces: false };
  const args = ['--die-with-parent'];
  if (!features.userNamespace) args.push('--unshare-user-try');
  else {
    args.push('--unshare-user');
    // A root host's uid 0 inside would be the host's root to the kernel's sysctl and owner checks;
    // another uid inside still maps to the host user outside, so files keep their owner.
    const hostUid = target.hostUid ?? process.getuid?.();
    if (hostUid === 0) {
      const id = String(SANDBOX_UNPRIVILEGED_ID);
      args.push('--uid', id, '--gid', id);
    }
    if (features.disableUserNamespaces) args.push('--disable-userns');
  }
  // Its own pid namespace: when its first process dies the kernel kills every process in it.
  args.push('--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try');
  if (target.options.network !== true) args.push('--unshare-net');
  args.push('--cap-drop', 'ALL');
  return args;
}

/**
 * The file system seen from inside: all read-only, a private /dev and a read-only /proc (so
 * /proc/sys, /proc/sysrq-trigger and the rest cannot change the host's kernel; /sys is
 * read-only through the root bind), the hidden places emptied.
 */
function baseMounts(hidden: readonly string[]): string[] {
  const args: string[] = [...KERNEL_MOUNTS];
  for (const entry of new Set(hidden)) {
    const kind = kindOf(entry);
    // A symlink (/var/run → /run) is hidden through its target; the root cannot be hidden.
    if (kind === undefined || entry === '/' || lstatSync(entry).isSymbolicLink()) continue;
    args.push(...(kind === 'directory' ? ['--tmpfs', entry] : ['--ro-bind', '/dev/null', entry]));
  }
  return args;
}

/** PATH entries (and the program) under a hidden directory, shown again read-only. */
function shownToolchain(target: SandboxedProcess, hidden: readonly string[]): string[] {
  // Deepest first, so a toolchain is measured from the closest hidden directory above it.
  const hiddenDirectories = hidden.filter((entry) => kindOf(entry) === 'directory').sort((a, b) => b.length - a.length);
  const shown = new Set<string>(target.options.readablePaths ?? []);
  for (const entry of [...target.pathVariable.split(path.delimiter), path.dirname(target.file)]) {
    if (!path.isAbsolute(entry) || kindOf(entry) === undefined) continue;
    const above = hiddenDirectories.find((directory) => isInside(entry, directory));
    if (above === undefined) continue;
    // `…/bin` of an installed toolchain needs its `…/lib` beside it (npm is bin/npm → ../lib/…), but
    // `~/bin` or `~/.local/bin` must not show the whole home or `~/.local`: only two levels down or more.
    // Version managers' `shims` (pyenv, rbenv, asdf) run the manager beside them: `~/.pyenv/shims` shows `~/.pyenv`.
    const parent = path.dirname(entry);
    const depth = path.relative(above, parent).split(path.sep).filter(Boolean).length;
    const name = path.basename(entry);
    shown.add((name === 'bin' && depth >= 2) || (name === 'shims' && depth >= 1) ? parent : entry);
  }
  const args: string[] = [];
  for (const entry of shown) {
    if (!isInside(target.workspace, entry) && kindOf(entry) !== undefined) args.push('--ro-bind', entry, entry);
  }
  return args;
}

/** The host's git config files, shown read-only where git looks for them in the private home. */
function gitConfigMounts(target: SandboxedProcess, hostHome: string): string[] {
  if (target.options.gitConfig === false) return [];
  const xdg = target.xdgConfigHome ?? process.env.XDG_CONFIG_HOME ?? path.join(hostHome, '.config');
  const files: [string, string][] = [
    [path.join(hostHome, '.gitconfig'), path.posix.join(SANDBOX_HOME, '.gitconfig')],
    [path.join(xdg, 'git', 'config'), path.posix.join(SANDBOX_HOME, '.config', 'git', 'config')],
  ];
  const args: string[] = [];
  for (const [source, target] of files)
    if (kindOf(source) === 'file') args.push('--ro-bind', realOrSelf(source), target);
  return args;
}

/**
 * Protected paths: hidden (directories, databases) or read-only (other files), and every directory between a writable root and them bound onto
 * itself, because a mount point cannot be renamed (a renamed parent would let the process put
 * a file of its own where the host looks for the protected one).
 */
function protectedMounts(target: SandboxedProcess, writable: readonly string[]): string[] {
  const args: string[] = [];
  const pinned = new Set<string>(writable);
  const list = protectedPathsOf(target.workspace, target.options.protectedPaths ?? []);
  for (const [index, entry] of list.entries()) {
    const kind = kindOf(entry);
    if (kind === undefined) continue;
    const real = realOrSelf(entry);
    if (isInside(target.workspace, real)) {
      throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `the protected path ${entry} holds the whole workspace`, {
        location: `protectedPaths/${index}`,
      });
    }
    const root = writable.find((directory) => isInside(real, directory));
    for (let directory = path.dirname(real); root && isInside(directory, root) && !pinned.has(directory); ) {
      pinned.add(directory);
      args.push('--bind', directory, directory);
      directory = path.dirname(directory);
    }
    if (kind === 'directory') args.push('--tmpfs', real, '--remount-ro', real);
    // A database is hidden; another file (config, plugin: sources under version control) is shown read-only,
    // since an empty device in its place makes `git status` see a change and `git add -A` fail.
    else args.push('--ro-bind', isSqliteData(real) ? '/dev/null' : real, real);
  }
  return args;
}

const SQLITE_HEADER = 'SQLite format 3\0';

/** A SQLite database (by its header) or one of its side files (by name). */
function isSqliteData(file: string): boolean {
  if (SQLITE_SIDE_FILES.some((suffix) => file.endsWith(suffix))) return true;
  let descriptor: number | undefined;
  try {
    descriptor = openSync(file, 'r');
    const header = Buffer.alloc(SQLITE_HEADER.length);
    readSync(descriptor, header, 0, header.length, 0);
    return header.toString('latin1') === SQLITE_HEADER;
  } catch {
    // Unreadable here: hide it.
    return true;
  } finally {
    if (descriptor !== undefined) closeSync(descriptor);
  }
}

/**
 * bubblewrap's arguments (before `--` and the command): the whole file system read-only,
 * private /dev and /tmp, /proc read-only, the home directories, temp directories, sockets and
 * credential files hidden, the workspace read-write, the protected paths hidden wherever they
 * are, a private HOME (with the host's git config), no network unless allowed, no capabilities,
 * no new privileges (bubblewrap always sets PR_SET_NO_NEW_PRIVS), and for a root host an
 * unprivileged uid inside where a user namespace can be made.
 * Shared with @stepwise/tools-node and @stepwise/tools-mcp; not part of the public API.
 * @internal
 */
export function bubblewrapArguments(target: SandboxedProcess): string[] {
  const hostHome = target.hostHome ?? homedir();
  const hidden = [...defaultHidden(hostHome), ...(target.options.hiddenPaths ?? [])];
  const writable = [target.workspace, ...(target.options.writablePaths ?? []).filter((entry) => kindOf(entry))];
  return [
    ...namespaceArguments(target),
    ...baseMounts(hidden),
    ...shownToolchain(target, hidden),
    ...writable.flatMap((entry) => ['--bind', entry, entry]),
    ...gitConfigMounts(target, hostHome),
    ...protectedMounts(target, writable),
    '--dir',
    SANDBOX_HOME,
    '--chdir',
    target.cwd,
  ];
}

/**
 * The arguments a probe starts `true` with: the same namespaces, uid and kernel mounts a process
 * gets, so a probe that succeeds means the real set-up will (some containers allow namespaces but
 * not a new /proc, or a read-only one).
 * Shared with @stepwise/tools-node and @stepwise/tools-mcp; not part of the public API.
 * @internal
 */
export function bubblewrapProbeArguments(features: BubblewrapFeatures, hostUid?: number): string[] {
  const target = { workspace: '/', cwd: '/', file: 'true', pathVariable: '', options: {}, features };
  return [
    ...namespaceArguments(hostUid === undefined ? target : { ...target, hostUid }),
    ...KERNEL_MOUNTS,
    '--tmpfs',
    '/tmp',
  ];
}

/**
 * The environment a sandboxed process gets: the caller's, with the private HOME and temp directory.
 * Shared with @stepwise/tools-node and @stepwise/tools-mcp; not part of the public API.
 * @internal
 */
export function sandboxEnvironment(environment: Readonly<Record<string, string>>): Record<string, string> {
  return { ...environment, HOME: SANDBOX_HOME, TMPDIR: '/tmp', TMP: '/tmp', TEMP: '/tmp' };
}

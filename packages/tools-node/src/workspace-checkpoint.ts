import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { commitChanges, type FileChange } from './commit-changes.js';
import { errorCode } from './file-system.js';
import { ALWAYS_SKIPPED, DEFAULT_IGNORED, GitignoreFilter } from './gitignore-filter.js';
import type { ProtectedPaths } from './protected-paths.js';
import { walkTree } from './walk-tree.js';
import { WorkspaceSandbox } from './workspace-sandbox.js';

/** The snapshot would exceed `maxBytes` or `maxFiles`: checkpoint fewer paths or raise the caps. */
export const CHECKPOINT_TOO_LARGE = ErrorCodes.CHECKPOINT_TOO_LARGE;

export interface WorkspaceCheckpointOptions {
  /** The workspace root, or the sandbox the tools use (its symlink and protection rules then apply). */
  readonly workspace: string | WorkspaceSandbox;
  /**
   * Files or directories (workspace paths) to snapshot; one that does not exist is recorded as
   * absent, so restore deletes whatever was created there. Default `['.']`: the whole workspace.
   */
  readonly paths?: readonly string[];
  /**
   * Names (of directories or files) left out at any depth: neither recorded nor touched by restore.
   * Default `.git`, `node_modules`. Leave out anything another process writes meanwhile, such as a
   * journal database inside the workspace: restoring it would overwrite that process's writes.
   */
  readonly exclude?: readonly string[];
  /** Leave out what `.gitignore` ignores (build output, caches). Default true. */
  readonly gitignore?: boolean;
  /** Bytes of file contents the snapshot may hold. Default 64 MiB. */
  readonly maxBytes?: number;
  /** Files and directories the snapshot may hold. Default 20,000. */
  readonly maxEntries?: number;
}

type Entry =
  | { readonly type: 'file'; readonly contents: Buffer; readonly mode: number }
  | { readonly type: 'directory'; readonly mode: number }
  | { readonly type: 'symlink'; readonly target: string };

/** What differs between the workspace now and the checkpoint (workspace paths, sorted). */
export interface WorkspaceChanges {
  /** Exist now, did not at the checkpoint (or changed type). */
  readonly created: readonly string[];
  /** Files whose bytes or permission bits differ, and symlinks with another target. */
  readonly modified: readonly string[];
  /** Existed at the checkpoint, gone now. */
  readonly deleted: readonly string[];
}

export interface WorkspaceCheckpoint {
  /** Files, directories and symlinks recorded. */
  readonly entries: number;
  /** Bytes of file contents recorded. */
  readonly bytes: number;
  /** Compares the workspace with the checkpoint without changing anything. */
  changes(): Promise<WorkspaceChanges>;
  /**
   * Puts every recorded path back byte for byte (contents and permission bits), deletes what was
   * created since, recreates what was deleted, and returns what it changed.
   */
  restore(): Promise<WorkspaceChanges>;
  /**
   * Writes the checkpoint to `directory` (a manifest and one file per distinct content), so that
   * `openCheckpoint` can restore it from another process (after a crash). The directory is
   * replaced whole; keep it outside the checkpoint's scope (an excluded name, or outside the workspace).
   */
  save(directory: string): Promise<void>;
}

interface SavedEntry {
  readonly path: string;
  readonly type: Entry['type'];
  readonly mode?: number;
  readonly target?: string;
  /** SHA-256 of the contents: the file's name in the directory. */
  readonly blob?: string;
}

interface Scope {
  readonly sandbox: WorkspaceSandbox;
  readonly root: string;
  readonly roots: readonly string[];
  readonly exclude: ReadonlySet<string>;
  readonly gitignore: GitignoreFilter | undefined;
  readonly guarded: ProtectedPaths;
}

function byDepth(left: string, right: string): number {
  return left.split('/').length - right.split('/').length || (left < right ? -1 : left > right ? 1 : 0);
}

/** Every in-scope path under the roots, with its type; nothing is followed through a symlink. */
async function scan(scope: Scope): Promise<Map<string, 'file' | 'directory' | 'symlink'>> {
  const found = new Map<string, 'file' | 'directory' | 'symlink'>();
  for (const relative of scope.roots) {
    const absolute = path.join(scope.root, relative);
    let stats: Awaited<ReturnType<WorkspaceSandbox['fileSystem']['lstat']>>;
    try {
      stats = await scope.sandbox.fileSystem.lstat(absolute);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') continue;
      throw error;
    }
    if (stats.isSymbolicLink()) found.set(relative, 'symlink');
    else if (stats.isFile()) found.set(relative, 'file');
    if (!stats.isDirectory()) continue;
    if (relative !== '') found.set(relative, 'directory');
    const walk = walkTree(absolute, relative, {
      root: scope.root,
      // Protected paths (the store, config) are another process's: never recorded or restored.
      skip: (entry) => scope.guarded.coversRelative(entry),
      skipDirectories: [...scope.exclude],
      ...(scope.gitignore ? { gitignore: scope.gitignore } : {}),
    });
    for (const entry of walk) {
      if (entry.type === 'other' || scope.exclude.has(entry.name)) continue;
      found.set(entry.relative, entry.type);
    }
  }
  return found;
}

async function record(scope: Scope, options: WorkspaceCheckpointOptions): Promise<Map<string, Entry>> {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const maxEntries = options.maxEntries ?? 20_000;
  const { fileSystem } = scope.sandbox;
  const entries = new Map<string, Entry>();
  let bytes = 0;
  for (const [relative, type] of await scan(scope)) {
    const absolute = path.join(scope.root, relative);
    if (type === 'symlink') entries.set(relative, { type, target: await fileSystem.readlink(absolute) });
    else if (type === 'directory')
      entries.set(relative, { type, mode: (await fileSystem.lstat(absolute)).mode & 0o7777 });
    else {
      const mode = (await fileSystem.lstat(absolute)).mode & 0o7777;
      const contents = await fileSystem.readFile(absolute);
      bytes += contents.length;
      entries.set(relative, { type, contents, mode });
    }
    if (bytes > maxBytes || entries.size > maxEntries) {
      throw new StepwiseError(
        CHECKPOINT_TOO_LARGE,
        `the checkpoint would exceed ${bytes > maxBytes ? `${maxBytes} bytes` : `${maxEntries} entries`}: checkpoint fewer paths or raise the limit`,
        { location: relative, details: { maxBytes, maxEntries, bytes, entries: entries.size } },
      );
    }
  }
  return entries;
}

/** True when a recorded entry no longer matches the workspace (type, link target, mode or bytes). */
async function differs(scope: Scope, relative: string, entry: Entry, now: string | undefined): Promise<boolean> {
  if (now !== entry.type) return true;
  const absolute = path.join(scope.root, relative);
  const { fileSystem } = scope.sandbox;
  if (entry.type === 'symlink') return (await fileSystem.readlink(absolute)) !== entry.target;
  const mode = (await fileSystem.lstat(absolute)).mode & 0o7777;
  if (mode !== entry.mode) return true;
  return entry.type === 'file' && !(await fileSystem.readFile(absolute)).equals(entry.contents);
}

async function compare(scope: Scope, recorded: ReadonlyMap<string, Entry>): Promise<WorkspaceChanges> {
  const current = await scan(scope);
  const created: string[] = [];
  const modified: string[] = [];
  const deleted: string[] = [];
  for (const [relative, type] of current) {
    const entry = recorded.get(relative);
    if (!entry || entry.type !== type) created.push(relative);
  }
  for (const [relative, entry] of recorded) {
    const now = current.get(relative);
    if (now === undefined || now !== entry.type) deleted.push(relative);
    else if (await differs(scope, relative, entry, now)) modified.push(relative);
  }
  return { created: created.sort(byDepth), modified: modified.sort(byDepth), deleted: deleted.sort(byDepth) };
}

async function restore(scope: Scope, recorded: ReadonlyMap<string, Entry>): Promise<WorkspaceChanges> {
  const changes = await compare(scope, recorded);
  const { fileSystem } = scope.sandbox;
  // Created paths go first (shallowest first; rm takes what is inside), so a directory swapped
  // for a symlink is gone before anything is written beneath its name.
  const removed: string[] = [];
  for (const relative of changes.created) {
    if (removed.some((parent) => relative.startsWith(`${parent}/`))) continue;
    await fileSystem.rm(path.join(scope.root, relative), { recursive: true, force: true });
    removed.push(relative);
  }
  const missing = [...changes.deleted, ...changes.modified].sort(byDepth);
  const files: FileChange[] = [];
  for (const relative of missing) {
    const entry = recorded.get(relative) as Entry;
    const absolute = path.join(scope.root, relative);
    if (entry.type === 'directory') {
      await fileSystem.mkdir(absolute, { recursive: true });
      await fileSystem.chmod(absolute, entry.mode);
    } else if (entry.type === 'symlink') {
      await fileSystem.rm(absolute, { force: true });
      await symlink(entry.target, absolute);
    } else {
      files.push({ absolute, relative, contents: entry.contents, mode: entry.mode });
    }
  }
  // Atomic per file (temporary + rename, O_NOFOLLOW), and all or nothing across files.
  await commitChanges(fileSystem, files, { createDirectories: true });
  return changes;
}

async function save(recorded: ReadonlyMap<string, Entry>, directory: string): Promise<void> {
  const staging = `${directory}.${process.pid}.partial`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const entries: SavedEntry[] = [];
  for (const [relative, entry] of recorded) {
    if (entry.type === 'symlink') entries.push({ path: relative, type: 'symlink', target: entry.target });
    else if (entry.type === 'directory') entries.push({ path: relative, type: 'directory', mode: entry.mode });
    else {
      const blob = createHash('sha256').update(entry.contents).digest('hex');
      await writeFile(path.join(staging, blob), entry.contents);
      entries.push({ path: relative, type: 'file', mode: entry.mode, blob });
    }
  }
  await writeFile(path.join(staging, 'manifest.json'), JSON.stringify({ version: 1, entries }));
  // Whole or absent: a crash while saving leaves the previous directory (or none), never half of one.
  await rm(directory, { recursive: true, force: true });
  await rename(staging, directory);
}

async function load(directory: string): Promise<Map<string, Entry>> {
  let manifest: { entries?: SavedEntry[] };
  try {
    manifest = JSON.parse(await readFile(path.join(directory, 'manifest.json'), 'utf8'));
  } catch (error) {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `no readable checkpoint in ${directory}`, {
      location: directory,
      cause: error,
    });
  }
  const entries = new Map<string, Entry>();
  for (const saved of manifest.entries ?? []) {
    if (saved.type === 'symlink') entries.set(saved.path, { type: 'symlink', target: saved.target ?? '' });
    else if (saved.type === 'directory') entries.set(saved.path, { type: 'directory', mode: saved.mode ?? 0o755 });
    else {
      const contents = await readFile(path.join(directory, saved.blob ?? ''));
      entries.set(saved.path, { type: 'file', contents, mode: saved.mode ?? 0o644 });
    }
  }
  return entries;
}

async function scopeOf(options: WorkspaceCheckpointOptions): Promise<Scope> {
  const sandbox =
    options.workspace instanceof WorkspaceSandbox
      ? options.workspace
      : new WorkspaceSandbox({ root: options.workspace });
  const root = await sandbox.realRoot();
  const roots: string[] = [];
  for (const input of options.paths ?? ['.']) {
    roots.push((await sandbox.resolve(input, { followFinalSymlink: false })).relative);
  }
  // `.git` is never restored, whatever the options: writing there is code execution by the next git call.
  const exclude = new Set([...ALWAYS_SKIPPED, ...(options.exclude ?? DEFAULT_IGNORED)]);
  const gitignore = options.gitignore === false ? undefined : new GitignoreFilter(root);
  const guarded = await sandbox.protectedPaths();
  return { sandbox, root, roots: [...new Set(roots)].sort(byDepth), exclude, gitignore, guarded };
}

function checkpointOf(scope: Scope, recorded: ReadonlyMap<string, Entry>): WorkspaceCheckpoint {
  let bytes = 0;
  for (const entry of recorded.values()) if (entry.type === 'file') bytes += entry.contents.length;
  return {
    entries: recorded.size,
    bytes,
    changes: () => compare(scope, recorded),
    restore: () => restore(scope, recorded),
    save: (directory) => save(recorded, directory),
  };
}

/**
 * Records files of a workspace (all of it by default, within size caps) so an attempt's changes
 * can be undone exactly: `restore()` writes back every recorded byte and permission bit and
 * deletes whatever the attempt created in scope. Paths go through the sandbox (E402 outside the
 * workspace); symlinks are recorded as links, never followed. Throws E311 when the caps are hit.
 */
export async function createCheckpoint(options: WorkspaceCheckpointOptions): Promise<WorkspaceCheckpoint> {
  const scope = await scopeOf(options);
  return checkpointOf(scope, await record(scope, options));
}

/**
 * A checkpoint `save(directory)` wrote, for the same workspace and options (paths, exclusions,
 * gitignore): its `changes()` and `restore()` work as the original's did. Throws E601 when the
 * directory holds no checkpoint.
 */
export async function openCheckpoint(
  directory: string,
  options: Omit<WorkspaceCheckpointOptions, 'maxBytes' | 'maxEntries'>,
): Promise<WorkspaceCheckpoint> {
  const scope = await scopeOf(options);
  return checkpointOf(scope, await load(directory));
}

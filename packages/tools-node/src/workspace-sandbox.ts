import path from 'node:path';
import { ErrorCodes, SandboxViolation, StepwiseError } from '@stepwise/core';
import { fileSystemError } from './file-errors.js';
import { errorCode, type FileSystem, nodeFileSystem } from './file-system.js';
import { isInside } from './is-inside.js';
import { ProtectedPaths } from './protected-paths.js';

export { isInside } from './is-inside.js';

export interface WorkspaceSandboxOptions {
  /** The workspace root. Resolved against the process cwd; must be an existing directory when first used. */
  readonly root: string;
  /** Longest path accepted, in characters. Default 4096 (Linux PATH_MAX). */
  readonly maxPathLength?: number;
  /** Longest single path segment, in UTF-8 bytes. Default 255 (NAME_MAX). */
  readonly maxSegmentBytes?: number;
  /**
   * Directory names that may be read but never written, deleted or edited, at any depth.
   * Default `['.git']`: writing `.git/config` or `.git/hooks/*` is code execution by the next `git` call.
   */
  readonly protectedNames?: readonly string[];
  /**
   * Files or directories no file tool may read, list, write or delete (`details.reason:
   * "protected"`), wherever a path or symlink leads: the store's database, config and plugin files.
   * Absolute, or relative to the workspace. Always added: `.stepwise/` in the workspace and
   * `stepwise.config.*` at its root; every file also protects its SQLite `-wal`, `-shm` and `-journal`.
   */
  readonly protectedPaths?: readonly string[];
  /** Where file operations go. Default: the real file system. */
  readonly fileSystem?: FileSystem;
}

/** What a sandbox check produced: a real path inside the workspace. */
export interface ResolvedPath {
  /** The path as the caller gave it. */
  readonly input: string;
  /** The real absolute path (symlinks resolved). Operate on this, never on `input`. */
  readonly absolute: string;
  /** POSIX-style path relative to the real workspace root (`""` is the root). */
  readonly relative: string;
  /** False when the path (or one of its parents) does not exist yet. */
  readonly exists: boolean;
}

export interface ResolveOptions {
  /** `write` also refuses protected directories (`.git`) and the workspace root itself. Default `read`. */
  readonly access?: 'read' | 'write';
  /**
   * When false, a final symlink is not followed: the link itself is the target (used by
   * delete and listings). Parents are always resolved. Default true.
   */
  readonly followFinalSymlink?: boolean;
}

/** Why a path was refused; stable strings for hosts that switch on them (`details.reason`). */
export type SandboxReason =
  | 'empty'
  | 'not-a-string'
  | 'nul-byte'
  | 'control-character'
  | 'too-long'
  | 'segment-too-long'
  | 'home-directory'
  | 'windows-drive'
  | 'windows-unc'
  | 'url'
  | 'outside-workspace'
  | 'symlink-escape'
  | 'symlink-loop'
  | 'protected'
  | 'workspace-root';

const MAX_SYMLINK_HOPS = 40;

/**
 * Confines every path to one workspace directory. A path is normalised, checked lexically,
 * then resolved with `realpath` (for a path that does not exist yet, the real path of its
 * nearest existing ancestor, following dangling symlinks by hand) and the real result must
 * be inside the real root — checked with `path.relative`, never with a string prefix.
 */
export class WorkspaceSandbox {
  readonly root: string;
  readonly fileSystem: FileSystem;
  readonly #maxPathLength: number;
  readonly #maxSegmentBytes: number;
  readonly #protectedNames: ReadonlySet<string>;
  readonly #protectedPaths: readonly string[];
  #realRoot: Promise<string> | undefined;
  #protected: ProtectedPaths | undefined;

  constructor(options: WorkspaceSandboxOptions) {
    if (typeof options.root !== 'string' || options.root.length === 0 || options.root.includes('\0')) {
      throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'the workspace root must be a non-empty path', {
        location: 'workspace',
      });
    }
    this.root = path.resolve(options.root);
    this.fileSystem = options.fileSystem ?? nodeFileSystem;
    this.#maxPathLength = options.maxPathLength ?? 4096;
    this.#maxSegmentBytes = options.maxSegmentBytes ?? 255;
    this.#protectedNames = new Set((options.protectedNames ?? ['.git']).map((name) => name.toLowerCase()));
    this.#protectedPaths = [...(options.protectedPaths ?? [])];
  }

  /** The protected paths (see `protectedPaths`), once the root is known. */
  async protectedPaths(): Promise<ProtectedPaths> {
    const root = await this.realRoot();
    this.#protected ??= new ProtectedPaths(root, this.#protectedPaths);
    return this.#protected;
  }

  /** The real path of the root (resolved once). Fails with E601 when the root is not a directory. */
  realRoot(): Promise<string> {
    this.#realRoot ??= (async () => {
      try {
        const real = await this.fileSystem.realpath(this.root);
        if (!(await this.fileSystem.stat(real)).isDirectory()) throw new Error('not a directory');
        return real;
      } catch (error) {
        this.#realRoot = undefined;
        throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `the workspace ${this.root} is not a directory`, {
          location: 'workspace',
          cause: error,
        });
      }
    })();
    return this.#realRoot;
  }

  /**
   * Lexical checks only (no file system access): refuses NUL and control characters, `~`,
   * Windows drive and UNC forms, URLs and over-long paths, and returns the path normalised
   * to forward slashes. Backslashes count as separators on every platform, so `..\\..\\x`
   * is treated as the traversal it is on Windows.
   */
  normalize(input: unknown): string {
    if (typeof input !== 'string') throw violation('not-a-string', 'a path must be a string', String(input));
    if (input.length === 0) throw violation('empty', 'the path is empty; use "." for the workspace root', input);
    if (input.includes('\0')) throw violation('nul-byte', 'the path contains a NUL byte', input);
    if (/[\u0001-\u001f\u007f]/.test(input)) {
      throw violation('control-character', 'the path contains a control character', input);
    }
    if (input.length > this.#maxPathLength) {
      throw violation('too-long', `the path is longer than ${this.#maxPathLength} characters`, input);
    }
    if (/^[\\/]{2}/.test(input)) {
      throw violation('windows-unc', 'UNC and device paths (\\\\server\\share, \\\\?\\, //host) are refused', input);
    }
    if (/^[A-Za-z]:/.test(input)) throw violation('windows-drive', 'Windows drive paths (C:\\…) are refused', input);
    if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(input) || /^file:/i.test(input)) {
      throw violation('url', 'pass a path, not a URL', input);
    }
    if (input.startsWith('~')) {
      throw violation('home-directory', '"~" is not expanded; give a path relative to the workspace', input);
    }
    const normalized = input.replace(/\\/g, '/');
    for (const segment of normalized.split('/')) {
      if (Buffer.byteLength(segment) > this.#maxSegmentBytes) {
        throw violation('segment-too-long', `a path segment is longer than ${this.#maxSegmentBytes} bytes`, input);
      }
      if (process.platform === 'win32' && segment.includes(':')) {
        throw violation('windows-drive', 'alternate data streams (name:stream) are refused', input);
      }
    }
    return normalized;
  }

  /**
   * Resolves a path argument to a real path inside the workspace, or throws a
   * `SandboxViolation` (E402, `location` = the offending path as given).
   */
  async resolve(input: string, options: ResolveOptions = {}): Promise<ResolvedPath> {
    const normalized = this.normalize(input);
    const realRoot = await this.realRoot();
    const lexical = path.resolve(this.root, normalized);
    // Lexical containment first: `..` and absolute paths are refused before touching the disk.
    if (!isInside(this.root, lexical) && !isInside(realRoot, lexical)) {
      throw violation('outside-workspace', 'the path is outside the workspace', input);
    }
    let resolved: { real: string; exists: boolean };
    try {
      if (options.followFinalSymlink === false && lexical !== this.root && lexical !== realRoot) {
        const parent = await this.#realpathLoose(path.dirname(lexical), input, 0);
        const real = path.join(parent.real, path.basename(lexical));
        resolved = { real, exists: parent.exists && (await this.#lexists(real)) };
      } else {
        resolved = await this.#realpathLoose(lexical, input, 0);
      }
    } catch (error) {
      throw fileSystemError(error, input, 'resolve');
    }
    if (!isInside(realRoot, resolved.real)) {
      throw violation('symlink-escape', 'the path leads outside the workspace through a symbolic link', input, {
        resolved: resolved.real,
      });
    }
    const relative = toPosix(path.relative(realRoot, resolved.real));
    const guarded = await this.protectedPaths();
    if (guarded.covers(resolved.real) || (options.access === 'write' && guarded.within(resolved.real))) {
      throw violation('protected', 'the path is protected (the run journal, a config or a plugin file)', input);
    }
    if (options.access === 'write') {
      if (relative === '') throw violation('workspace-root', 'the workspace root itself cannot be changed', input);
      const segments = relative.split('/');
      if (segments.some((segment) => this.#protectedNames.has(segment.toLowerCase()))) {
        throw violation(
          'protected',
          `the path is inside a protected directory (${[...this.#protectedNames].join(', ')})`,
          input,
        );
      }
    }
    return { input, absolute: resolved.real, relative, exists: resolved.exists };
  }

  /** True when a real absolute path is inside the real root. */
  async contains(absolute: string): Promise<boolean> {
    return isInside(await this.realRoot(), absolute);
  }

  /** POSIX-style path of a real absolute path, relative to the real root. */
  async relativeOf(absolute: string): Promise<string> {
    return toPosix(path.relative(await this.realRoot(), absolute));
  }

  async #lexists(absolute: string): Promise<boolean> {
    try {
      await this.fileSystem.lstat(absolute);
      return true;
    } catch {
      return false;
    }
  }

  /** realpath, or for a missing path the real path of its nearest existing ancestor plus the rest. */
  async #realpathLoose(absolute: string, input: string, hops: number): Promise<{ real: string; exists: boolean }> {
    if (hops > MAX_SYMLINK_HOPS) throw violation('symlink-loop', 'too many levels of symbolic links', input);
    try {
      return { real: await this.fileSystem.realpath(absolute), exists: true };
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ELOOP') throw violation('symlink-loop', 'too many levels of symbolic links', input);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
    }
    const parentPath = path.dirname(absolute);
    if (parentPath === absolute) return { real: absolute, exists: false };
    const parent = await this.#realpathLoose(parentPath, input, hops);
    const candidate = path.join(parent.real, path.basename(absolute));
    // A dangling symlink: realpath fails, but creating the file would follow the link.
    let target: string | undefined;
    try {
      const stats = await this.fileSystem.lstat(candidate);
      if (stats.isSymbolicLink()) target = await this.fileSystem.readlink(candidate);
    } catch {
      target = undefined;
    }
    if (target !== undefined) return this.#realpathLoose(path.resolve(parent.real, target), input, hops + 1);
    return { real: candidate, exists: false };
  }
}

function toPosix(relative: string): string {
  return path.sep === '/' ? relative : relative.split(path.sep).join('/');
}

function violation(
  reason: SandboxReason,
  message: string,
  input: string,
  details: Record<string, unknown> = {},
): SandboxViolation {
  return new SandboxViolation(`${message}: ${JSON.stringify(truncate(input))}`, {
    location: input,
    details: { reason, ...details },
  });
}

function truncate(input: string): string {
  return input.length > 200 ? `${input.slice(0, 200)}…` : input;
}

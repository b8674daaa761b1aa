import {
  closeSync,
  constants,
  type Dirent,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  realpathSync,
} from 'node:fs';
import path from 'node:path';

/**
 * How a directory is named once it is open, so a path swapped for a symlink between a check and
 * a use cannot redirect the use:
 * - `proc` (Linux): `/proc/self/fd/<fd>` names the opened directory itself; `<that>/<name>` is
 *   resolved from it without looking at its path again (an `openat` for Node, which has none), and
 *   `readlink` of it says where the directory really is.
 * - `identity` (other POSIX systems, or Linux without /proc): the directory is used by its real
 *   path, checked to be the opened one (same device and inode) before and after. A swap and a swap
 *   back between the two checks is not seen: a documented limit.
 * - `path` (Windows, where a directory cannot be opened): by path, as before these checks.
 */
export type DescriptorMode = 'proc' | 'identity' | 'path';

let detected: DescriptorMode | undefined;

export function descriptorMode(): DescriptorMode {
  if (detected) return detected;
  if (constants.O_DIRECTORY === undefined || process.platform === 'win32') detected = 'path';
  else if (process.platform === 'linux' && existsSync('/proc/self/fd')) detected = 'proc';
  else detected = 'identity';
  return detected;
}

/** For tests: pretend a platform without /proc. */
export function setDescriptorModeForTesting(mode: DescriptorMode | undefined): void {
  detected = mode;
}

const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;
const DIRECTORY_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NONBLOCK ?? 0);

/** The path of an open descriptor in `proc` mode. */
export function descriptorPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}

/** Where an open descriptor really is: `/proc` says so, else the real path of `opened` if it is the same object. */
export function whereOpened(fd: number, opened: string): string | undefined {
  try {
    if (descriptorMode() === 'proc') {
      const real = readlinkSync(descriptorPath(fd));
      // An unlinked object reads as "<path> (deleted)"; a pipe or socket as "pipe:[…]".
      return path.isAbsolute(real) && !real.endsWith(' (deleted)') ? real : undefined;
    }
    const real = realpathSync(opened);
    const now = lstatSync(real);
    const held = fstatSync(fd);
    return now.dev === held.dev && now.ino === held.ino ? real : undefined;
  } catch {
    return undefined;
  }
}

/** An open directory, named so that nothing done through it can leave it. */
export interface OpenedDirectory {
  /** Its real path when it was opened (checked). */
  readonly real: string;
  /** The path of an entry of this very directory, for open, lstat, rename, unlink, mkdir… */
  child(name: string): string;
  /** Its entries. */
  list(): Dirent[];
  /** Where it really is now (undefined when that cannot be told any more). */
  where(): string | undefined;
  close(): void;
}

/**
 * Opens a directory and returns it when `accept(realPath)` agrees with where it really is
 * (undefined when it is missing, not a directory, a symlink and `followFinal` is false, or not
 * accepted). Parents are followed; the result is checked after opening, so a swap is caught.
 */
export function openDirectory(
  file: string,
  accept: (real: string) => boolean,
  followFinal = true,
): OpenedDirectory | undefined {
  const mode = descriptorMode();
  if (mode === 'path') {
    const real = safeRealpath(file);
    if (real === undefined || !accept(real)) return undefined;
    return {
      real,
      child: (name) => path.join(file, name),
      list: () => readdirSync(file, { withFileTypes: true }),
      where: () => safeRealpath(file),
      close() {},
    };
  }
  let fd: number;
  try {
    fd = openSync(file, DIRECTORY_FLAGS | (followFinal ? 0 : NO_FOLLOW));
  } catch {
    return undefined;
  }
  const real = whereOpened(fd, file);
  if (real === undefined || !accept(real)) {
    closeSync(fd);
    return undefined;
  }
  const base = mode === 'proc' ? descriptorPath(fd) : real;
  return {
    real,
    child: (name) => path.join(base, name),
    list: () => {
      const entries = readdirSync(base, { withFileTypes: true });
      // Without /proc the listing went by path: it counts only if the path still is the opened directory.
      if (mode === 'identity' && whereOpened(fd, real) !== real) return [];
      return entries;
    },
    where: () => whereOpened(fd, real),
    close: () => closeSync(fd),
  };
}

function safeRealpath(file: string): string | undefined {
  try {
    return realpathSync(file);
  } catch {
    return undefined;
  }
}

/** Opens an entry of an open directory without following a symlink there. */
export function openChildDirectory(
  parent: OpenedDirectory,
  name: string,
  accept: (real: string) => boolean,
): OpenedDirectory | undefined {
  return openDirectory(parent.child(name), accept, false);
}

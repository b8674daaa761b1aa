import * as fileSystemPromises from 'node:fs/promises';

/**
 * The subset of `node:fs/promises` the tools use. Every file operation goes through it, so
 * tests can inject failures (a rename that throws mid-commit) and hosts can wrap it.
 */
export type FileSystem = Pick<
  typeof fileSystemPromises,
  | 'chmod'
  | 'link'
  | 'lstat'
  | 'mkdir'
  | 'open'
  | 'readdir'
  | 'readFile'
  | 'readlink'
  | 'realpath'
  | 'rename'
  | 'rm'
  | 'rmdir'
  | 'stat'
  | 'unlink'
>;

/** The real file system. */
export const nodeFileSystem: FileSystem = {
  chmod: fileSystemPromises.chmod,
  link: fileSystemPromises.link,
  lstat: fileSystemPromises.lstat,
  mkdir: fileSystemPromises.mkdir,
  open: fileSystemPromises.open,
  readdir: fileSystemPromises.readdir,
  readFile: fileSystemPromises.readFile,
  readlink: fileSystemPromises.readlink,
  realpath: fileSystemPromises.realpath,
  rename: fileSystemPromises.rename,
  rm: fileSystemPromises.rm,
  rmdir: fileSystemPromises.rmdir,
  stat: fileSystemPromises.stat,
  unlink: fileSystemPromises.unlink,
};

/** The `code` of a Node system error (`ENOENT`, `EACCES`…), if it has one. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

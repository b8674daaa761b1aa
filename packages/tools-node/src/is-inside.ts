import path from 'node:path';

/** Containment by `path.relative`: `/ws-evil` is not inside `/ws`, a file named `..foo` is. */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  if (relative === '') return true;
  if (path.isAbsolute(relative)) return false;
  return relative !== '..' && !relative.startsWith(`..${path.sep}`);
}

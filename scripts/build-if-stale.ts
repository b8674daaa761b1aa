import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function newestSource(directory: string): number {
  let newest = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Tests that run real child processes import the package by name, i.e. its `dist`. Builds the
 * package at `root` when its build is missing or older than its sources, so they never test stale code.
 */
export function buildIfStale(root: string): void {
  const built = join(root, 'dist', 'index.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newestSource(join(root, 'src'))) return;
  execFileSync('npx', ['tsup'], { cwd: root, stdio: 'inherit' });
}

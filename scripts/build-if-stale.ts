import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGES = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages');

function newestFile(directory: string): number {
  let newest = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestFile(path) : statSync(path).mtimeMs);
  }
  return newest;
}

interface Manifest {
  readonly name: string;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
}

function manifestOf(root: string): Manifest {
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest;
}

/** The folder of every package in packages/, by name. */
function workspacePackages(): Map<string, string> {
  const folders = new Map<string, string>();
  for (const folder of readdirSync(PACKAGES)) {
    const root = join(PACKAGES, folder);
    if (existsSync(join(root, 'package.json'))) folders.set(manifestOf(root).name, root);
  }
  return folders;
}

/**
 * The package at `root` and every workspace package it depends on (also as a peer or for its
 * tests), dependencies first: the order they build in.
 */
function withDependencies(root: string): string[] {
  const folders = workspacePackages();
  const ordered: string[] = [];
  const entered = new Set<string>();
  const visit = (folder: string) => {
    // Entered once: a cycle through devDependencies ends here, and a shared dependency builds once.
    if (entered.has(folder)) return;
    entered.add(folder);
    const manifest = manifestOf(folder);
    const names = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies, ...manifest.devDependencies });
    for (const name of names) {
      const dependency = folders.get(name);
      if (dependency) visit(dependency);
    }
    ordered.push(folder);
  };
  visit(root);
  return ordered;
}

function isStale(root: string): boolean {
  const built = join(root, 'dist', 'index.js');
  return !existsSync(built) || statSync(built).mtimeMs < newestFile(join(root, 'src'));
}

/**
 * Tests that run real child processes import the packages by name, i.e. their `dist`, while the
 * tests themselves run the sources (vitest.package.ts). Builds the package at `root` and each
 * workspace package it depends on whose build is missing or older than its sources, so a child
 * process never runs stale code. Under `npm test`, turbo has built them all and nothing runs here.
 */
export function buildIfStale(root: string): void {
  for (const folder of withDependencies(root)) {
    if (isStale(folder)) execFileSync('npm', ['run', 'build', '--silent'], { cwd: folder, stdio: 'inherit' });
  }
}

/** As a vitest global setup (`globalSetup` in a package's vitest config): builds for that package. */
export default function setup(project: { readonly config: { readonly root: string } }): void {
  buildIfStale(project.config.root);
}

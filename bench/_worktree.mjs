// A built checkout of another commit, for before/after runs: a `git worktree` under the system's
// temporary directory whose node_modules links every installed package to this checkout's, except
// the @stepwise ones, which point at the worktree's own packages (built there with tsup, JavaScript
// only). Prepared once per commit and reused.
//
//   node bench/_worktree.mjs <rev>        prints the worktree's directory once it is built
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(new URL('..', import.meta.url).pathname);
/** The packages a bench imports, in build order (each after what it imports). */
const PACKAGES = ['core', 'store-sqlite', 'engine-dag', 'engine-sequential', 'engine-agentic', 'tools-node'];

const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

function linkModules(directory) {
  const modules = join(directory, 'node_modules');
  mkdirSync(join(modules, '@stepwise'), { recursive: true });
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (name === '@stepwise' || existsSync(join(modules, name))) continue;
    symlinkSync(join(root, 'node_modules', name), join(modules, name));
  }
  for (const name of readdirSync(join(directory, 'packages'))) {
    const link = join(modules, '@stepwise', name);
    if (!existsSync(link)) symlinkSync(join('..', '..', 'packages', name), link);
  }
}

/** The worktree of `rev` with its packages built; the directory. */
export function prepareWorktree(rev) {
  const commit = git('rev-parse', '--short', rev);
  const directory = join(tmpdir(), `stepwise-bench-${commit}`);
  const done = join(directory, '.bench-built');
  if (existsSync(done)) return directory;
  if (!existsSync(directory)) git('worktree', 'add', '--detach', directory, commit);
  linkModules(directory);
  for (const name of PACKAGES) {
    const cwd = join(directory, 'packages', name);
    try {
      // `--dts <entry>` names a declaration entry that does not exist: tsup writes the JavaScript
      // (all a bench reads) and then fails on the declarations, which are not needed.
      execFileSync('npx', ['tsup', '--dts', 'none', '--silent'], { cwd, stdio: 'ignore' });
    } catch {
      if (!existsSync(join(cwd, 'dist', 'index.js'))) throw new Error(`building ${name} at ${commit} failed`);
    }
  }
  writeFileSync(done, `${commit}\n`);
  return directory;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rev = process.argv[2];
  if (!rev) throw new Error('usage: node bench/_worktree.mjs <rev>');
  console.log(prepareWorktree(rev));
}

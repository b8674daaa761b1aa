// The Stepwise packages a bench measures, loaded from the built `dist` of a checkout: this one by
// default, or another commit's worktree (see _worktree.mjs) for before/after runs. Two checkouts
// load side by side in one process as separate module graphs.
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { prepareWorktree } from './_worktree.mjs';

export const repositoryRoot = resolve(new URL('..', import.meta.url).pathname);

const load = (root, name, entry = 'index') =>
  import(pathToFileURL(join(root, 'packages', name, 'dist', `${entry}.js`)).href);

/** The packages of the checkout at `root`. */
export async function stepwisePackages(root = repositoryRoot) {
  const [core, engine, store, testing, dag, sequential, sqlite, agentic, agenticTesting] = await Promise.all([
    load(root, 'core'),
    load(root, 'core', 'engine'),
    load(root, 'core', 'store'),
    load(root, 'core', 'testing/index'),
    load(root, 'engine-dag'),
    load(root, 'engine-sequential'),
    load(root, 'store-sqlite'),
    load(root, 'engine-agentic'),
    load(root, 'engine-agentic', 'testing/index'),
  ]);
  return { root, core, engine, store, testing, dag, sequential, sqlite, agentic, agenticTesting };
}

/**
 * The checkouts a bench compares: this one (labelled `HEAD`) and, when `--before <rev>` is on the
 * command line, the worktree of `rev` first (built on first use). Returns the remaining arguments.
 */
export async function checkoutsFromArguments(argv = process.argv.slice(2)) {
  const rest = [...argv];
  const at = rest.indexOf('--before');
  const checkouts = [];
  if (at >= 0) {
    const [, rev] = rest.splice(at, 2);
    if (!rev) throw new Error('--before needs a git revision');
    checkouts.push({ label: rev, packages: await stepwisePackages(prepareWorktree(rev)) });
  }
  checkouts.push({ label: 'HEAD', packages: await stepwisePackages() });
  return { checkouts, rest };
}

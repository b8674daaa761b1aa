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

/** Removes `--<name> <rev>` from `rest`; the rev, or undefined when the flag is absent. */
function takeRevision(rest, name) {
  const at = rest.indexOf(`--${name}`);
  if (at < 0) return undefined;
  const [, rev] = rest.splice(at, 2);
  if (!rev) throw new Error(`--${name} needs a git revision`);
  return rev;
}

/**
 * The checkouts a bench compares: this one (labelled `HEAD`) and, when `--before <rev>` is on the
 * command line, the worktree of `rev` first (built on first use). `--after <rev>` measures that
 * commit's worktree in place of this checkout, so a before/after run is not disturbed by edits and
 * rebuilds here while it runs. Returns the remaining arguments.
 */
export async function checkoutsFromArguments(argv = process.argv.slice(2)) {
  const rest = [...argv];
  const before = takeRevision(rest, 'before');
  const after = takeRevision(rest, 'after');
  const checkouts = [];
  if (before) checkouts.push({ label: before, packages: await stepwisePackages(prepareWorktree(before)) });
  checkouts.push(
    after
      ? { label: after, packages: await stepwisePackages(prepareWorktree(after)) }
      : { label: 'HEAD', packages: await stepwisePackages() },
  );
  return { checkouts, rest };
}

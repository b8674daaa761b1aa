import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configDefaults, type ViteUserConfig } from 'vitest/config';

/**
 * The test setup every package shares (as tsup.package.ts is the build every package shares).
 *
 * Tests import the workspace's packages by name (`@stepwise/core`, `@stepwise/core/testing`, …)
 * and get their sources, not their built `dist`: a change to `packages/core/src` is what
 * `engine-dag`'s tests run, without a build. The aliases are made from each package's
 * `exports`, so a new entry point is found without editing anything here.
 *
 * Child processes started by a test are plain Node: they import the built packages, which
 * scripts/build-if-stale.ts builds first for the packages that name it as a global setup.
 */

const ROOT = fileURLToPath(new URL('.', import.meta.url));
const PACKAGES = join(ROOT, 'packages');

/** `npm run test:quick` sets it: only the tests that need nothing but Node and the sources. */
export const QUICK = process.env.STEPWISE_TEST_QUICK === '1';

type ExportTarget = string | null | { readonly [condition: string]: ExportTarget };

/** The first JavaScript file an `exports` entry names (the ES module build comes first in ours). */
function javascriptFile(target: ExportTarget): string | undefined {
  if (target === null) return undefined;
  if (typeof target === 'string') return /\.(m|c)?js$/.test(target) ? target : undefined;
  for (const nested of Object.values(target)) {
    const file = javascriptFile(nested);
    if (file) return file;
  }
  return undefined;
}

/** `./dist/testing/index.js` → `src/testing/index.ts`; `./dist/testing.js` → `src/testing.ts` or `src/testing/index.ts`. */
function sourceOf(directory: string, built: string): string | undefined {
  const stem = built.replace(/^\.\/dist\//, '').replace(/\.(m|c)?js$/, '');
  for (const candidate of [`${stem}.ts`, `${stem}.tsx`, `${stem}/index.ts`]) {
    const file = join(directory, 'src', candidate);
    if (existsSync(file)) return file;
  }
  return undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Every JavaScript entry point of every package in packages/, mapped to the source file it is built from. */
export function workspaceSourceAliases(): { find: RegExp; replacement: string }[] {
  const aliases: { find: RegExp; replacement: string }[] = [];
  for (const folder of readdirSync(PACKAGES)) {
    const directory = join(PACKAGES, folder);
    const manifest = join(directory, 'package.json');
    if (!existsSync(manifest)) continue;
    const { name, exports } = JSON.parse(readFileSync(manifest, 'utf8')) as {
      name: string;
      exports?: Record<string, ExportTarget>;
    };
    for (const [subpath, target] of Object.entries(exports ?? {})) {
      const built = javascriptFile(target);
      if (!built) continue; // package.json, JSON schema files: read from where they are
      if (subpath.includes('*')) {
        throw new Error(`vitest.package.ts: ${name} exports the pattern ${subpath}; map patterns to sources here`);
      }
      const source = sourceOf(directory, built);
      if (!source) {
        throw new Error(
          `vitest.package.ts: ${name} exports ${subpath} as ${built}, but there is no src/ file of that name ` +
            `(.ts or /index.ts): name the tsup entry after the source file it builds`,
        );
      }
      const specifier = subpath === '.' ? name : `${name}/${subpath.replace(/^\.\//, '')}`;
      aliases.push({ find: new RegExp(`^${escapeRegExp(specifier)}$`), replacement: source });
    }
  }
  return aliases;
}

export interface TestSplit {
  /**
   * Test files (globs from the package folder) left out of `npm run test:quick`: those that start
   * Postgres, Chromium or tmux, run the built packages in child processes, kill processes on
   * purpose, or install packed tarballs. `npm test` runs them with the rest.
   */
  readonly fullOnly?: readonly string[];
}

/**
 * A package's vitest config: its own settings, the workspace's packages resolved to their
 * sources, and in quick mode without the `fullOnly` files and the global setups (which build
 * `dist` for the child processes of those files).
 */
export function packageTestConfig(config: ViteUserConfig, split: TestSplit = {}): ViteUserConfig {
  const test = { ...config.test };
  if (QUICK) {
    test.exclude = [...(test.exclude ?? configDefaults.exclude), ...(split.fullOnly ?? [])];
    test.globalSetup = [];
    test.passWithNoTests = true;
    // Test files share a worker's modules instead of loading every package's sources again for each
    // file: about half the CPU time. `npm test` keeps each file isolated; `npm run test:quick --
    // --isolate` does too, for a test that leaks state into the next file.
    test.isolate = false;
    // One pool for every package (the root vitest.config.ts sets its size): vitest refuses projects
    // that ask for pools of different sizes.
    delete test.maxWorkers;
  }
  return { ...config, resolve: { ...config.resolve, alias: workspaceSourceAliases() }, test };
}

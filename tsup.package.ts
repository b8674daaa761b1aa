import type { Options } from 'tsup';

/**
 * The build every package shares: ESM + CJS + declarations for Node 20, keeping `node:` imports
 * (vitest cannot resolve bare `timers/promises` from a sibling's build).
 *
 * No source maps: the output is not minified, so stack traces already point at readable code
 * with the source's names, while maps (their sources inlined, since `src/` is not published)
 * were about 60% of every tarball.
 */
export function packageBuild(entry: Record<string, string>, overrides: Options = {}): Options {
  return {
    entry,
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: false,
    target: 'node20',
    removeNodeProtocol: false,
    ...overrides,
  };
}

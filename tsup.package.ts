import type { Options } from 'tsup';

/**
 * The build every package shares: ESM + CJS + declarations for Node 20, keeping `node:` imports
 * (vitest cannot resolve bare `timers/promises` from a sibling's build).
 */
export function packageBuild(entry: Record<string, string>, overrides: Options = {}): Options {
  return {
    entry,
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    removeNodeProtocol: false,
    ...overrides,
  };
}

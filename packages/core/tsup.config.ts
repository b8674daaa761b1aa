import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.package';

export default defineConfig(
  packageBuild(
    {
      index: 'src/index.ts',
      engine: 'src/engine.ts',
      store: 'src/store.ts',
      'testing/index': 'src/testing/index.ts',
      'testing/vitest': 'src/testing/vitest.ts',
    },
    {
      clean: false,
      // vitest is an optional peer, imported only by testing/vitest. Its CommonJS build requires
      // vitest, which throws vitest's own "cannot be imported in a CommonJS module" error.
      external: ['vitest'],
      // One copy of each module for every entry, in CommonJS too (ES modules share chunks anyway):
      // without it each .cjs entry bundles its own MemoryStore, ToolRegistry, RunJournal and
      // StepwiseError, so a store made from one entry fails `instanceof` against another's class.
      splitting: true,
      shims: true,
    },
  ),
);

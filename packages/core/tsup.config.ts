import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.package';

const entries = (testing: string) => ({ index: 'src/index.ts', 'testing/index': testing });
// p-queue 9 (and p-timeout) ship ESM only: bundled, so `require()` gets a working PQueue class too.
const bundled = ['p-queue', 'p-timeout', 'eventemitter3'];

export default defineConfig([
  packageBuild(entries('src/testing/index.ts'), {
    format: ['esm'],
    clean: false,
    external: ['vitest'],
    noExternal: bundled,
  }),
  // CJS: the testing entry comes from index-cjs.ts, which leaves out the vitest-based suite.
  packageBuild(entries('src/testing/index-cjs.ts'), {
    format: ['cjs'],
    clean: false,
    external: ['vitest'],
    noExternal: bundled,
  }),
]);

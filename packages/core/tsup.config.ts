import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.package';

export default defineConfig(
  packageBuild(
    { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts', 'testing/vitest': 'src/testing/vitest.ts' },
    // vitest is an optional peer, imported only by testing/vitest. Its CommonJS build requires
    // vitest, which throws vitest's own "cannot be imported in a CommonJS module" error.
    { clean: false, external: ['vitest'] },
  ),
);

import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.package';

const entries = (testing: string) => ({ index: 'src/index.ts', 'testing/index': testing });

export default defineConfig([
  packageBuild(entries('src/testing/index.ts'), { format: ['esm'], clean: false, external: ['vitest'] }),
  // CJS: the testing entry comes from index-cjs.ts, which leaves out the vitest-based suite.
  packageBuild(entries('src/testing/index-cjs.ts'), { format: ['cjs'], clean: false, external: ['vitest'] }),
]);

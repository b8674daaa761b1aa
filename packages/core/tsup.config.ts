import { defineConfig, type Options } from 'tsup';

const shared: Options = {
  dts: true,
  sourcemap: true,
  target: 'node20',
  removeNodeProtocol: false,
  external: ['vitest'],
};

export default defineConfig([
  { ...shared, entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts' }, format: ['esm'] },
  // CJS: the testing entry comes from index-cjs.ts, which leaves out the vitest-based suite.
  { ...shared, entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index-cjs.ts' }, format: ['cjs'] },
]);

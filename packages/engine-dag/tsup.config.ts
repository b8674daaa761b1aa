import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  removeNodeProtocol: false,
  // p-queue 9 (and p-timeout) ship ESM only: bundled, so `require()` gets a working PQueue class too.
  noExternal: ['p-queue', 'p-timeout', 'eventemitter3'],
});

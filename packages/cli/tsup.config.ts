import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    clean: ['!bin.*'],
    sourcemap: true,
    target: 'node20',
    removeNodeProtocol: false,
  },
  {
    // The command line: ESM only, with a shebang so npm can link it as `stepwise`.
    entry: { bin: 'src/bin.ts' },
    format: ['esm'],
    dts: false,
    clean: false,
    sourcemap: true,
    target: 'node20',
    removeNodeProtocol: false,
    banner: { js: '#!/usr/bin/env node' },
  },
]);

import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.package';

export default defineConfig([
  packageBuild({ index: 'src/index.ts' }, { clean: ['!bin.*'] }),
  // The command line: ESM only, with a shebang so npm can link it as `stepwise`.
  packageBuild(
    { bin: 'src/bin.ts' },
    { format: ['esm'], dts: false, clean: false, banner: { js: '#!/usr/bin/env node' } },
  ),
]);

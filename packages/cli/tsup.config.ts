import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.package';

/**
 * Dependencies published only as ES modules: the CommonJS build carries its own copy, since
 * `require()` of an ES module needs Node 20.19 or later. The ES module build imports them.
 */
const ESM_ONLY_DEPENDENCIES = ['string-width', 'cli-truncate'];

export default defineConfig([
  // Only this build cleans `dist`, sparing what the three others write at the same time.
  packageBuild(
    { index: 'src/index.ts' },
    { format: ['esm'], dts: false, clean: ['!bin.*', '!index.cjs', '!index.d.ts', '!index.d.cts'] },
  ),
  packageBuild(
    { index: 'src/index.ts' },
    { format: ['cjs'], dts: false, clean: false, noExternal: ESM_ONLY_DEPENDENCIES },
  ),
  // The declarations of both builds from one TypeScript program (.d.ts and .d.cts), not one each.
  packageBuild({ index: 'src/index.ts' }, { format: ['esm', 'cjs'], dts: { only: true }, clean: false }),
  // The command line: ESM only, with a shebang so npm can link it as `stepwise`.
  packageBuild(
    { bin: 'src/bin.ts' },
    { format: ['esm'], dts: false, clean: false, banner: { js: '#!/usr/bin/env node' } },
  ),
]);

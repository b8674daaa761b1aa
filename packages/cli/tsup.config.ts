import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.package';

/**
 * Dependencies published only as ES modules: the CommonJS build carries its own copy, since
 * `require()` of an ES module needs Node 20.19 or later. The ES module build imports them.
 */
const ESM_ONLY_DEPENDENCIES = ['string-width', 'cli-truncate'];

export default defineConfig([
  // This build cleans `dist`, sparing what the three others write at the same time (the command
  // line's chunks, `main-*` and `chunk-*`, included; its own build clears the old ones).
  packageBuild(
    { index: 'src/index.ts' },
    {
      format: ['esm'],
      dts: false,
      clean: ['!bin.*', '!index.cjs', '!index.d.ts', '!index.d.cts', '!main-*', '!chunk-*'],
    },
  ),
  packageBuild(
    { index: 'src/index.ts' },
    { format: ['cjs'], dts: false, clean: false, noExternal: ESM_ONLY_DEPENDENCIES },
  ),
  // The declarations of both builds from one TypeScript program (.d.ts and .d.cts), not one each.
  packageBuild({ index: 'src/index.ts' }, { format: ['esm', 'cjs'], dts: { only: true }, clean: false }),
  // The command line: ESM only, with a shebang so npm can link it as `stepwise`. bin.js loads the
  // commands from a chunk (`main-*`) only when it must: `--version` answers without them. It clears
  // its old chunks and nothing the other builds write.
  packageBuild(
    { bin: 'src/bin.ts' },
    { format: ['esm'], dts: false, clean: ['!bin.*', '!index.*'], banner: { js: '#!/usr/bin/env node' } },
  ),
]);

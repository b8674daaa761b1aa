import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.package';

export default defineConfig(
  packageBuild(
    { index: 'src/index.ts' },
    // p-queue 9 (and p-timeout) ship ESM only: bundled, so `require()` gets a working PQueue class on
    // every Node 20 release. They are devDependencies, so nothing is installed twice; their licenses
    // are in this package's LICENSE.
    { noExternal: ['p-queue', 'p-timeout', 'eventemitter3'] },
  ),
);

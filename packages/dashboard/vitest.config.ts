import { packageTestConfig } from '../../vitest.package.js';

export default packageTestConfig(
  {
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      // Real servers, child processes and Chromium on 2 shared cores: assertions do not depend on it.
      testTimeout: 60_000,
      hookTimeout: 60_000,
      maxWorkers: 2,
      globalSetup: ['../../scripts/build-if-stale.ts'],
    },
  },
  {
    fullOnly: [
      // Chromium, child processes that import the built packages, Postgres.
      'test/*-page.test.ts',
      'test/*-process.test.ts',
      'test/*-postgres.test.ts',
    ],
  },
);

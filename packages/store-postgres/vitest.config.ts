import { packageTestConfig } from '../../vitest.package.js';

export default packageTestConfig(
  {
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      testTimeout: 30_000,
      hookTimeout: 60_000,
      globalSetup: ['../../scripts/build-if-stale.ts'],
    },
  },
  {
    // Every test starts a Postgres server.
    fullOnly: ['test/**'],
  },
);

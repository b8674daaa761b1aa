import { packageTestConfig } from '../../vitest.package.js';

export default packageTestConfig(
  {
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      // The whole suite shares 2 cores with every other package's tests: 5 s is too short for the
      // property and process tests there. Assertions do not depend on it.
      testTimeout: 30_000,
      globalSetup: ['../../scripts/build-if-stale.ts'],
    },
  },
  {
    // A child process runs the built engine and is killed mid-run.
    fullOnly: ['test/crash-resume.test.ts'],
  },
);

import { packageTestConfig } from '../../vitest.package.js';

export default packageTestConfig(
  {
    test: {
      // The whole suite shares 2 cores with every other package's tests: 5 s is too short for the
      // property and process tests there. Assertions do not depend on it.
      testTimeout: 30_000,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      globalSetup: ['../../scripts/build-if-stale.ts'],
    },
  },
  {
    // Child processes open the built store (one is killed mid-write, one runs as another user).
    fullOnly: ['test/crash.test.ts', 'test/concurrent-resume.test.ts', 'test/bad-input.test.ts'],
  },
);

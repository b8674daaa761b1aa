import { packageTestConfig } from '../../vitest.package.js';

export default packageTestConfig(
  {
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      // The whole suite shares 2 cores with every other package's tests: 5 s is too short for the
      // property and process tests there. Assertions do not depend on it.
      testTimeout: 30_000,
    },
  },
  {
    // The kernel's sandbox (bubblewrap) for real, and a race run for STEPWISE_RACE_SECONDS.
    fullOnly: ['test/os-sandbox.test.ts', 'test/os-sandbox-kernel.test.ts', 'test/file-race.test.ts'],
  },
);

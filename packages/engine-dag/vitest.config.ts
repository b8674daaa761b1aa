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
    // Child processes run the built engine and store; two of them are killed mid-run.
    fullOnly: [
      'test/sigkill-resume.test.ts',
      'test/revised-run-sigkill.test.ts',
      'test/waiting.test.ts',
      'test/adjust-sigkill.test.ts',
    ],
  },
);

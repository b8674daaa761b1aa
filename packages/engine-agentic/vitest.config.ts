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
    // Child processes run the built packages (the example, a host killed mid-run, a host asking a person).
    fullOnly: ['test/ask-person.test.ts', 'test/resume-after-kill.test.ts', 'test/example-agentic-fix-test.test.ts'],
  },
);

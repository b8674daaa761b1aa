import { packageTestConfig } from '../../vitest.package.js';

export default packageTestConfig(
  {
    test: {
      // Real workspaces, checkpoints and validation commands (child processes) on a shared 2-core
      // machine: 5 s is too short under load. Assertions do not depend on it.
      testTimeout: 60_000,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      globalSetup: ['../../scripts/build-if-stale.ts'],
    },
  },
  {
    // The example runs the built packages in a child process.
    fullOnly: ['test/example-code-agent.test.ts'],
  },
);

import { packageTestConfig } from '../../vitest.package.js';

export default packageTestConfig(
  {
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      // Real child processes on a possibly loaded machine: generous limits, never timed assertions.
      testTimeout: 30_000,
      hookTimeout: 30_000,
      globalSetup: ['../../scripts/build-if-stale.ts'],
    },
  },
  {
    // Hosts that run the built packages (one killed mid-call), and servers in the kernel's sandbox.
    fullOnly: ['test/process-lifetime.test.ts', 'test/plugin-host.test.ts', 'test/os-sandbox.test.ts'],
  },
);

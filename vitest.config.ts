import { defineConfig } from 'vitest/config';

/**
 * Every package's tests in one vitest process, each package a project with its own config
 * (vitest.package.ts). `npm run test:quick` runs it with STEPWISE_TEST_QUICK=1: the unit tests,
 * from the sources, with no build. `npm test` runs each package's vitest through turbo instead.
 */
export default defineConfig({
  test: {
    projects: ['packages/*'],
    // Most test files wait on timers, files and small child processes: more files than cores.
    maxWorkers: 3,
  },
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The whole suite shares 2 cores with every other package's tests: 5 s is too short for the
    // property and process tests there. Assertions do not depend on it.
    testTimeout: 30_000,
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
  },
});

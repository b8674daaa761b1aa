import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // The CLI tests start real processes (and Chromium); a loaded 2-core machine needs headroom.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Test files mostly wait for child processes, so a few run side by side even on 2 cores.
    maxWorkers: 3,
  },
});

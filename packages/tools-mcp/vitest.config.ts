import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Real child processes on a possibly loaded machine: generous limits, never timed assertions.
  test: { include: ['src/**/*.test.ts', 'test/**/*.test.ts'], testTimeout: 30_000, hookTimeout: 30_000 },
});

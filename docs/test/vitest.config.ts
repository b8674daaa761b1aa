import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['*.test.ts'],
    // Type-checking every snippet and running the runnable ones (real child processes) is slow
    // on a loaded machine.
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});

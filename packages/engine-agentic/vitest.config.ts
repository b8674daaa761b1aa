import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Sibling packages are consumed as built (their dist), loaded by Node itself rather than transformed.
    server: { deps: { external: [/\/packages\/[^/]+\/dist\//] } },
  },
});

import { startThrowawayPostgres, type ThrowawayPostgres } from '../src/testing/index.js';

/**
 * One throwaway server per test file: `STEPWISE_TEST_POSTGRES_URL` (an existing server) when set,
 * else the machine's binaries. `undefined` (and one message) when neither is available.
 */
export async function testPostgres(): Promise<{ url: string; server: ThrowawayPostgres | undefined } | undefined> {
  const existing = process.env.STEPWISE_TEST_POSTGRES_URL;
  if (existing) return { url: existing, server: undefined };
  try {
    const server = await startThrowawayPostgres();
    return { url: server.url, server };
  } catch (error) {
    console.warn(
      `store-postgres: skipping the Postgres tests: ${(error as Error).message}. Install Debian's postgresql package or set STEPWISE_TEST_POSTGRES_URL.`,
    );
    return undefined;
  }
}

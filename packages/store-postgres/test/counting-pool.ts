import pg from 'pg';

/**
 * A pool whose connections count the statements each pattern matches (by name), so a test can
 * show what a worker sent: its claims, its reads of a run's summary.
 */
export function countingPool<Name extends string>(url: string, patterns: Record<Name, RegExp>) {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const names = Object.keys(patterns) as Name[];
  const counts = Object.fromEntries(names.map((name) => [name, 0])) as Record<Name, number>;
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
      for (const name of names) if (patterns[name].test(text ?? '')) counts[name]++;
      return query(...args);
    };
  });
  return { pool, counts };
}

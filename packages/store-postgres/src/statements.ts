import type pg from 'pg';
import { sha256 } from './blob-fields.js';

/** A pool or a client checked out of it: what the hot statements run on. */
export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

/** A statement whose text never changes: prepared once per connection under `name`. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

/** Names the text by its hash: two schemas, or two versions of this package, never share a name. */
export function statement(text: string): Statement {
  return { name: `stepwise_${sha256(text).slice(0, 24)}`, text };
}

/** Runs a prepared statement; its rows. */
export async function runStatement<Row extends pg.QueryResultRow>(
  client: Queryable,
  prepared: Statement,
  values: unknown[],
): Promise<Row[]> {
  const result = await client.query<Row>({ name: prepared.name, text: prepared.text, values });
  return result.rows;
}

/** `build(schema)`, built once per schema. */
export function perSchema<T>(build: (schema: string) => T): (schema: string) => T {
  const built = new Map<string, T>();
  return (schema) => {
    let value = built.get(schema);
    if (value === undefined) {
      value = build(schema);
      built.set(schema, value);
    }
    return value;
  };
}

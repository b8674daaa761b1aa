import type { RunEvent } from '@stepwise/core';
import { unpackEvent } from './blob-fields.js';
import { perSchema, type Queryable, runStatement, statement } from './statements.js';

const pageStatements = perSchema((schema) => ({
  events: statement(`select payload, blob_refs from "${schema}"."events"
    where run_id = $1 and seq > $2 order by seq limit $3`),
  blobs: statement(`select sha256, content from "${schema}"."blobs" where sha256 = any($1::text[])`),
}));

/**
 * Events of a run after `afterSeq`, at most `limit`, with their blobs put back. `client` is the pool,
 * or the client of the transaction that reads them.
 */
export async function readEventPage(
  client: Queryable,
  schema: string,
  runId: string,
  afterSeq: number,
  limit: number,
): Promise<RunEvent[]> {
  const statements = pageStatements(schema);
  const rows = await runStatement<{ payload: Record<string, unknown>; blob_refs: Record<string, string> | null }>(
    client,
    statements.events,
    [runId, afterSeq, limit],
  );
  const hashes = new Set<string>();
  for (const row of rows) for (const hash of Object.values(row.blob_refs ?? {})) hashes.add(hash);
  const contents = new Map<string, string>();
  if (hashes.size > 0) {
    const blobs = await runStatement<{ sha256: string; content: string }>(client, statements.blobs, [[...hashes]]);
    for (const blob of blobs) contents.set(blob.sha256, blob.content);
  }
  return rows.map((row) => unpackEvent(row.payload, row.blob_refs, contents));
}

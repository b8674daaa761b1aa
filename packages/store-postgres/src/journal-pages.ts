import type { RunEvent } from '@stepwise/core';
import type { Kysely } from 'kysely';
import { unpackEvent } from './blob-fields.js';
import type { PostgresStoreDatabase } from './database-schema.js';

/** Events of a run after `afterSeq`, at most `limit`, with their blobs put back. */
export async function readEventPage(
  db: Kysely<PostgresStoreDatabase>,
  runId: string,
  afterSeq: number,
  limit: number,
): Promise<RunEvent[]> {
  const rows = await db
    .selectFrom('events')
    .select(['payload', 'blob_refs'])
    .where('run_id', '=', runId)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(limit)
    .execute();
  const hashes = new Set<string>();
  for (const row of rows) for (const hash of Object.values(row.blob_refs ?? {})) hashes.add(hash);
  const contents = new Map<string, string>();
  if (hashes.size > 0) {
    const blobs = await db
      .selectFrom('blobs')
      .select(['sha256', 'content'])
      .where('sha256', 'in', [...hashes])
      .execute();
    for (const blob of blobs) contents.set(blob.sha256, blob.content);
  }
  return rows.map((row) => unpackEvent(row.payload as Record<string, unknown>, row.blob_refs, contents));
}

import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { runStart, stamp, temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('checkpoint');

/** Frames in the WAL after `batches` one-step commits of about 3 KB each, read by a second connection. */
async function walFramesAfter(file: string, batches: number, checkpointPages?: number): Promise<number> {
  const path = join(directory, file);
  const store = createSqliteStore({ path, ...(checkpointPages === undefined ? {} : { checkpointPages }) });
  const runId = 'run_wal';
  await store.append(runId, [runStart(runId)]);
  for (let index = 0; index < batches; index++) {
    const step = {
      type: 'step-start',
      stepId: `s${index}`,
      tool: 'echo',
      attempt: 1,
      args: { text: 'x'.repeat(3000) },
    };
    await store.append(runId, stamp(runId, index + 2, [step as never]));
  }
  // A PASSIVE checkpoint reports the WAL's frame count before it copies anything back.
  const reader = new Database(path);
  const [row] = reader.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
  reader.close();
  await store.close();
  return row?.log ?? -1;
}

describe('checkpointPages', () => {
  it('lets the WAL grow past SQLite’s 1000 pages by default, and checkpoints at the pages asked for', async () => {
    const byDefault = await walFramesAfter('default.db', 600);
    const small = await walFramesAfter('small.db', 600, 100);
    // 600 commits of a 3 KB row and its step row: well over 1000 frames, under the default 10000.
    expect(byDefault).toBeGreaterThan(1000);
    expect(byDefault).toBeLessThan(10_000);
    // At 100 pages the WAL restarts from its beginning after each checkpoint.
    expect(small).toBeLessThan(200);
  });
});

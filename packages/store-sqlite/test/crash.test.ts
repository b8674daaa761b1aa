import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { readAll } from '@stepwise/core';
import { foldRun } from '@stepwise/core/store';
import { seededRandom } from '@stepwise/core/testing';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { expectProjectionsMatchFold } from './fold-expectations.js';
import { fixture, spawnNode, temporaryDirectory } from './helpers.js';

const ROUNDS = 50;
// Five writers on different runs of one file: every kill also lands while other processes are
// writing (or waiting for the lock), and the rounds overlap, which keeps the test short.
const LANES = 5;
const directory = temporaryDirectory('crash');

interface Acknowledged {
  readonly first: number;
  readonly last: number;
  readonly digest: string;
}

const parseAck = (line: string): Acknowledged => {
  const [, first, last, digest] = line.split(' ');
  return { first: Number(first), last: Number(last), digest: digest as string };
};

describe('SIGKILL at random moments', () => {
  it(`loses no acknowledged batch and tears none, over ${ROUNDS} kills`, { timeout: 420_000 }, async () => {
    const path = join(directory, 'crash.db');
    const lanes = await Promise.all(
      Array.from({ length: LANES }, (_, lane) => killRepeatedly(path, `run_crash_${lane}`, ROUNDS / LANES, lane)),
    );
    for (const lane of lanes) expect(lane.journalLength).toBeGreaterThan((ROUNDS / LANES) * 2);
    // An event's pieces commit with it: none without its event, every event's all there.
    const database = new Database(path, { readonly: true });
    const pieces = database.prepare('select count(*) from event_chunks').pluck().get() as number;
    const referred = database
      .prepare(
        "select coalesce(sum(blob_refs ->> '$[0][3]'), 0) from events where blob_refs ->> '$[0][2]' = 'json-chunks'",
      )
      .pluck()
      .get();
    const orphans = database
      .prepare('select count(*) from event_chunks c where not exists (select 1 from events e where e.id = c.event_id)')
      .pluck()
      .get();
    database.close();
    expect(pieces).toBeGreaterThan(0);
    expect({ referred, orphans }).toEqual({ referred: pieces, orphans: 0 });
    console.info(
      `crash test: ${ROUNDS} kills; ${lanes.map((lane) => `${lane.journalLength} events, ${lane.committedButUnacknowledged} kills between commit and acknowledgement, ${lane.idleKills} of an idle writer`).join('; ')}`,
    );
  });
});

async function killRepeatedly(path: string, runId: string, rounds: number, lane: number) {
  const random = seededRandom(20_240_601 + lane);
  let journalLength = 0;
  let committedButUnacknowledged = 0;
  // Kills that found the writer done with its bounded rounds (see crash-writer.mjs): not mid-write.
  let idleKills = 0;
  for (let round = 0; round < rounds; round++) {
    // The last lane keeps the default inline limits: its medium outputs are written in pieces.
    const thresholds = lane === LANES - 1 ? 'default' : 'small';
    const child = spawnNode(fixture('crash-writer.mjs'), [path, runId, String(lane * 1000 + round + 1), thresholds]);
    // Kill at a random moment after the writer's first batch of this round: a slow machine can
    // make starting a process take longer than any fixed delay.
    // Waits up to a minute: beside other packages' tests a writer can be slow to start. (Two CI runs
    // reported a writer that printed nothing, "got []": this process had been blocked past the deadline
    // in a synchronous SQLite wait of another lane's store, and the timer fired before the waiting
    // lines were read; `waitFor` now decides after they are.)
    await child.waitFor((line) => line === 'started', 60_000);
    const loopAcks = () => child.lines.slice(child.lines.indexOf('started')).filter((line) => line.startsWith('ack '));
    await child.waitFor(() => loopAcks().length > 0, 60_000);
    await new Promise((resolve) => setTimeout(resolve, random() * 30));
    child.process.kill('SIGKILL');
    const exit = await child.exited;
    expect(exit.signal, `the writer died on its own: ${exit.stderr}`).toBe('SIGKILL');
    const acks = child.lines.filter((line) => line.startsWith('ack ')).map(parseAck);
    if (child.lines.includes('idle')) idleKills += 1;

    const store = createSqliteStore({ path, busyTimeoutMs: 60_000 });
    try {
      const events = await readAll(store, runId);
      // Gap-free from 1, and nothing acknowledged is missing.
      expect(events.map((event) => event.seq)).toEqual(Array.from({ length: events.length }, (_, index) => index + 1));
      const lastAcknowledged = acks.at(-1)?.last ?? journalLength;
      expect(events.length).toBeGreaterThanOrEqual(lastAcknowledged);
      if (events.length > lastAcknowledged) committedButUnacknowledged += 1;
      // Every acknowledged batch reads back byte for byte (large values included).
      for (const ack of acks) {
        const batch = JSON.stringify(events.slice(ack.first - 1, ack.last));
        expect(createHash('sha256').update(batch).digest('hex'), `batch ${ack.first}-${ack.last}`).toBe(ack.digest);
      }
      // No torn batch: the journal ends where some batch ended.
      expect(['run-start', 'tool-call', 'step-end', 'step-retry']).toContain(events.at(-1)?.type);
      // Projections agree with the fold: the summary, all steps, this round's executions and a sample.
      const run = foldRun(events, runId);
      const checked = new Set<string>();
      for (const event of events.slice(journalLength)) {
        if (event.type === 'tool-call' || event.type === 'tool-result') checked.add(event.executionId);
      }
      const all = [...run.executions.keys()];
      for (let index = 0; index < 5 && all.length > 0; index++) {
        checked.add(all[Math.floor(random() * all.length)] as string);
      }
      await expectProjectionsMatchFold(store, runId, events, checked);
      journalLength = events.length;
    } finally {
      await store.close();
    }
  }
  return { journalLength, committedButUnacknowledged, idleKills };
}

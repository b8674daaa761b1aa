// Imported by _stepwise-worker.mjs when BENCH_PROFILE=1 (off otherwise): counts the statements a
// worker sends by kind, with their mean round-trip time, and its CPU time, reported on stderr when
// it stops. Where a step's time goes: statements per step and run, transactions (BEGIN) against
// appends (group commit sizes), time waiting for Postgres against time on the CPU.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import pg from 'pg';

const stats = new Map();
let inFlight = 0;
let maxInFlight = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function profiledQuery(config, values, callback) {
  const text = typeof config === 'string' ? config : (config?.text ?? '');
  const kind = text.replace(/\s+/g, ' ').trim().slice(0, 70);
  const started = performance.now();
  inFlight++;
  maxInFlight = Math.max(maxInFlight, inFlight);
  const record = () => {
    inFlight--;
    const entry = stats.get(kind) ?? { count: 0, ms: 0 };
    entry.count++;
    entry.ms += performance.now() - started;
    stats.set(kind, entry);
  };
  const result = query.call(this, config, values, callback);
  if (result && typeof result.then === 'function') result.then(record, record);
  else record();
  return result;
};

// BENCH_PROFILE=<directory>: also a CPU profile of the worker, written there (open in Chrome's DevTools).
const cpuProfileDirectory = process.env.BENCH_PROFILE === '1' ? undefined : process.env.BENCH_PROFILE;
const session = cpuProfileDirectory ? new Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}

let cpuAtStart = process.cpuUsage();
let wallAtStart = performance.now();

/** Starts counting again (after a warm-up). */
export function resetProfile() {
  stats.clear();
  maxInFlight = inFlight;
  cpuAtStart = process.cpuUsage();
  wallAtStart = performance.now();
}

/** Writes the counts to stderr. */
export async function reportProfile(extra = '') {
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(`${cpuProfileDirectory}/worker-${process.pid}.cpuprofile`, JSON.stringify(profile));
  }
  const cpu = process.cpuUsage(cpuAtStart);
  const lines = [...stats.entries()]
    .sort((a, b) => b[1].count - a[1].count)
    .map(([kind, s]) => `${String(s.count).padStart(7)} ${(s.ms / s.count).toFixed(2).padStart(7)} ms  ${kind}`);
  const wall = (performance.now() - wallAtStart).toFixed(0);
  const head = `[profile ${process.pid}] wall ${wall} ms, cpu user ${(cpu.user / 1000).toFixed(0)} ms sys ${(cpu.system / 1000).toFixed(0)} ms, statements in flight at most ${maxInFlight} ${extra}`;
  process.stderr.write(`${head}\n${lines.join('\n')}\n`);
}

import { rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';

const Database = createRequire(import.meta.resolve('@stepwise/store-sqlite'))('better-sqlite3');
const N = 10000;
function rows() {
  const out = [];
  const at = Date.now();
  for (let i = 0; i < N; i++) {
    const stepId = `s${i}`,
      ex = 'ex_' + 'a1b2c3d4e5f6a7b8c9d0e1f2',
      iso = new Date(at).toISOString();
    out.push(['step-start', JSON.stringify({ stepId, tool: 'echo', attempt: 1, executionId: ex })]);
    out.push([
      'tool-call',
      JSON.stringify({
        stepId,
        executionId: ex,
        attempt: 1,
        tool: 'echo',
        effect: 'read',
        idempotent: true,
        args: { value: i },
      }),
    ]);
    out.push([
      'tool-result',
      JSON.stringify({ stepId, executionId: ex, tool: 'echo', status: 'succeeded', startedAt: iso, durationMs: 0 }),
    ]);
    out.push([
      'step-end',
      JSON.stringify({
        stepId,
        result: {
          stepId,
          tool: 'echo',
          status: 'succeeded',
          executionId: ex,
          attempt: 1,
          startedAt: iso,
          durationMs: 0,
        },
      }),
    ]);
  }
  return out;
}
const data = rows();
function variant(name, pageSize, ddl, insertSql, bind, batch = 2) {
  const path = `/tmp/exp/${name}.db`;
  rmSync(path, { force: true });
  rmSync(path + '-wal', { force: true });
  const db = new Database(path);
  db.pragma(`page_size = ${pageSize}`);
  db.pragma('journal_mode = WAL');
  db.exec(ddl);
  const ins = db.prepare(insertSql);
  const tx = db.transaction((list, start) => list.forEach((r, j) => ins.run(...bind(r, start + j + 1))));
  for (let i = 0; i < data.length; i += batch) tx(data.slice(i, i + batch), i);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  console.log(name.padEnd(30), pageSize, Math.round(statSync(path).size / N), 'bytes/step');
}
const now = Date.now();
for (const ps of [4096, 8192, 16384]) {
  variant(
    'withoutrowid',
    ps,
    'create table events (run_key integer not null, seq integer not null, type text not null, at not null, payload text not null, blob_refs text, primary key (run_key, seq)) without rowid',
    'insert into events values (?,?,?,?,?,null)',
    (r, seq) => [1, seq, r[0], now, r[1]],
  );
  variant(
    'rowid-composite',
    ps,
    'create table events (id integer primary key, type text not null, at not null, payload text not null, blob_refs text)',
    'insert into events values (?,?,?,?,null)',
    (r, seq) => [2 ** 32 + seq, r[0], now, r[1]],
  );
}
variant(
  'rowid+uniqueidx',
  4096,
  'create table events (run_key integer not null, seq integer not null, type text not null, at not null, payload text not null, blob_refs text, unique (run_key, seq))',
  'insert into events values (?,?,?,?,?,null)',
  (r, seq) => [1, seq, r[0], now, r[1]],
);

// Rewrites the benchmark figures in the READMEs from the benches' own output: every block between
// `<!-- bench:<name> -->` and `<!-- /bench:<name> -->` in a package README (or bench/README.md)
// becomes the table rendered from bench/results/<name>.json, which the bench wrote on its last run
// (see bench/_protocol.mjs). A block whose results are missing is left as it is, and named.
//
//   node scripts/bench-figures.mjs            rewrite every block it has results for
//   node scripts/bench-figures.mjs <name>...  rewrite only the blocks of those benches (the others'
//                                             results on this machine may be from other runs)
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(new URL('..', import.meta.url).pathname);
const results = join(root, 'bench', 'results');

const fixed = (value, digits = 1) => Number(value).toFixed(digits);
const thousands = (value) => Math.round(value).toLocaleString('en');
/** A target's verdict, as every table and sentence here words it. */
const verdict = (ok) => (ok ? 'met' : 'not met');
const table = (header, rows) =>
  [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');

/** The line naming the run every table comes from. */
function provenance(record) {
  const [one, , fifteen] = record.load;
  return `Output of \`${record.command}\` on ${record.at.slice(0, 16).replace('T', ' ')} UTC (Node ${record.node.slice(1)}, load average ${fixed(one, 2)} at the end, ${fixed(fifteen, 2)} over 15 minutes):`;
}

const renderers = {
  append: (record) =>
    [
      table(
        ['store', 'batching', 'steps', 'µs per step-equivalent', 'appends/s', '× MemoryStore', '× bare SQLite'],
        record.rows.map((row) => [
          row.store,
          row.batching,
          thousands(row.steps),
          row['µs/step'],
          row['appends/s'],
          row['× MemoryStore'] || '—',
          row['× bare SQLite'] || '—',
        ]),
      ),
      '',
      `Database for a ${thousands(record.steps)}-step run (plan, ${thousands(record.size.events)} events, projections): ${record.size.bytes} bytes = ${record.size.perStep} bytes/step (${record.size.tables.map((entry) => `\`${entry.name}\` ${entry.perStep}`).join(', ')}).`,
      '',
      `One batch at \`NORMAL\`: ${record.measured.microsecondsPerStep} µs per step-equivalent (target ≤ ${record.targets.microsecondsPerStep}: ${verdict(record.measured.met)}; ${record.measured.versusBare}× the bare SQLite journal); ${record.size.perStep} bytes per no-output step (target ≤ ${thousands(record.targets.bytesPerStep)}: ${verdict(record.measured.bytesMet)}).`,
    ].join('\n'),
  overhead: (record) =>
    [
      `${thousands(record.steps)} no-op steps of a \`read\` tool, µs per step outside the tool (wall clock; CPU: user + system of the process), median of ${record.rounds} rounds after ${record.warmUp ?? 1} full-size warm-up runs:`,
      '',
      table(
        [
          'store',
          'engine',
          'engine CPU',
          'core kernel loop',
          'engine − kernel',
          'replay',
          'target',
          'verdict',
          'engine, every round',
        ],
        record.rows.map((row) => [
          row.store,
          row['engine µs/step'],
          row['engine CPU µs/step'] ?? '—',
          row['core kernel loop µs/step'],
          row['engine − kernel'],
          row['replay µs/step'],
          `≤ ${row.target}`,
          row.verdict,
          row.rounds.join(', '),
        ]),
      ),
      '',
      `Floor, bare better-sqlite3 (\`NORMAL\`): the one transaction a read tool's step needs ${record.floor.oneTransaction} µs/step (${record.floor.oneVersusTarget} the ${record.floor.sqliteTarget} µs SQLite target before any engine work), the same rows as two transactions (a non-idempotent tool's step) ${record.floor.twoTransactions}; the engine on SQLite is ${record.floor.engineOverFloor}× the one-transaction floor. Diagnostic, memory with redaction off: ${record.redactionOff.memory} µs/step${record.redactionOff.share ? ` (${record.redactionOff.share} of the memory cost is core's redaction)` : ' (redaction cost below the noise)'}.`,
    ].join('\n'),
  'turn-overhead': (record) =>
    [
      `${record.steps} goal steps × ${record.turnsPerStep + 1} turns = ${thousands(record.turns)} model turns (scripted model, no-op tool)${record.rounds ? `, median of ${record.rounds} interleaved rounds after a warm-up` : ''}:`,
      '',
      table(
        ['contender', 'ms per turn', 'over the bare loop, ms per turn', '× Stepwise (MemoryStore)', 'events'],
        record.rows.map((row) => [row.label, row.perTurn, row.overhead, row.versusStepwise, row.events ?? '—']),
      ),
      '',
      `Target < 1 ms engine overhead per turn (MemoryStore): ${verdict(record.target.met)} (${record.target.overhead}). Memory: ${record.memory.retainedKiB} KiB of heap retained per goal step of ${record.turnsPerStep + 1} turns (the MemoryStore's journal included; ${record.memory.journalKiB} KiB of journal JSON per step).`,
    ].join('\n'),
  large: (record) =>
    [
      `${thousands(record.runs)} runs of one step and one run of ${thousands(record.steps)} steps in a SQLite store, median of ${record.rounds} after one warm-up:`,
      '',
      table(
        ['measurement', 'ms', 'KB'],
        record.rows.map((row) => [row.label, row.ms, row.kb ?? '—']),
      ),
    ].join('\n'),
  'call-overhead': (record) =>
    [
      `${record.calls} calls of \`@modelcontextprotocol/server-memory\`'s \`read_graph\` (stdio), median of ${record.rounds} interleaved rounds after a warm-up:`,
      '',
      table(
        ['contender', 'ms per call', 'ratio'],
        record.rows.map((row) => [
          row.contender,
          row.msPerCall,
          row.versus ? `×${row.versus} vs ${row.reference}` : '—',
        ]),
      ),
    ].join('\n'),
  'dag-engine': (record) =>
    [
      ...record.makespans.flatMap((entry) => [
        `Makespan on ${entry.label} with skewed sleeps: critical path ${entry.critical} ms over ${entry.levels} levels, total work ${entry.total} ms, lower bound with 8 slots ${entry.lowerBound8} ms; median of ${record.rounds} interleaved rounds:`,
        '',
        table(
          ['run', 'makespan ms', 'ratio to bound', 'incl. validation ms', 'CPU ms (whole run)', 'bound'],
          entry.rows.map((row) => [
            row.run,
            row['makespan ms'],
            row['ratio to bound'],
            row['incl. validation ms'] || '—',
            row['CPU ms (whole run)'] || '—',
            row.bound,
          ]),
        ),
        '',
        `Target makespan / critical path ≤ ${record.targetRatio} unbounded: ${entry.unboundedRatio}, ${verdict(entry.met)}. Ours / LangGraph makespan: unbounded ${entry.versusLangGraph.memory} (memory), ${entry.versusLangGraph.sqlite} (SQLite, both \`NORMAL\`), concurrency 8 ${entry.versusLangGraph.bounded}.`,
        '',
      ]),
      `Engine overhead on ${thousands(record.overheadSteps)} no-op steps (random DAG, unbounded), median of ${record.rounds} runs:`,
      '',
      table(
        ['store', 'engine µs/step', 'incl. validation µs/step', 'core kernel loop µs/step', 'engine / kernel'],
        record.overhead.map((row) => [
          row.store,
          row['engine µs/step'],
          row['incl. validation µs/step'],
          row['core kernel loop µs/step'],
          row['engine / kernel'],
        ]),
      ),
      '',
      `LangGraph on the same no-op DAG shape at ${thousands(record.langgraphSteps)} steps (compile not counted), median of ${record.rounds} interleaved rounds:`,
      '',
      table(
        ['store', 'stepwise µs/step', 'langgraph µs/step', 'langgraph compile ms', 'ours / theirs'],
        record.comparison.map((row) => [
          row.store,
          row['stepwise µs/step'],
          row['langgraph µs/step'],
          row['langgraph compile ms'],
          row['ours / theirs'],
        ]),
      ),
    ].join('\n'),
  'cpu-per-step': (record) => {
    const header = [...new Set(record.rows.flatMap((row) => Object.keys(row)))];
    return table(
      header,
      record.rows.map((row) =>
        header.map((key) => (row[key] === undefined ? '—' : key === 'steps' ? thousands(row[key]) : row[key])),
      ),
    );
  },
  'own-javascript': (record) =>
    [
      `${thousands(record.steps)} steps appended with the statements stubbed, median of ${record.rounds} interleaved rounds after ${record.warmUp} warm-up rounds:`,
      '',
      table(
        ['checkout', 'shape', 'commits', "store's CPU µs/step", 'bytes allocated per step'],
        record.rows.map((row) => [row.checkout, row.shape, thousands(row.commits), row.cpu, thousands(row.allocated)]),
      ),
      ...record.pairs.map(
        (pair) => `\n${pair.shape}: ${pair.after} / ${pair.before}, CPU per round, median ${pair.ratio}.`,
      ),
      ...record.rows
        .filter((row) => row.pausedUser !== undefined)
        .map(
          (row) =>
            `\n${row.checkout} ${row.shape}, the thread paused ${row.pauseUs} µs after each commit (as an fsync pauses it): user CPU ${row.pausedUser} µs/step.`,
        ),
    ].join('\n'),
  search: (record) =>
    [
      `A generated tree of ${thousands(record.files)} files in ${record.directories} directories (${record.needles} contain the needle); \`file_search\` through the core kernel, interleaved with \`grep\` run by run, median of ${record.runs}:`,
      '',
      table(
        ['search', '`grep` ms', '`file_search` ms', '× `grep`', 'target ≤ 3×'],
        [
          [
            `literal, \`grep -rn\` (${record.literal.grepLines} lines; ${record.literal.searchMatches} matches)`,
            record.literal.grep,
            record.literal.search,
            record.literal.ratio,
            verdict(record.literal.met),
          ],
          ['regex, `grep -rnE`', record.regex.grep, record.regex.search, record.regex.ratio, '—'],
        ],
      ),
      '',
      `\`file_edit\` of one line in the middle of a ${record.edit.megabytes} MB file (exactly-once check, atomic write and fsync, unified diff): ${record.edit.edit} ms, against ${record.edit.bare} ms for a bare read + replace + write (${record.edit.ratio}×), median of ${record.runs}.`,
    ].join('\n'),
  workers: (record) => {
    const cpu = (side) => `${fixed(side.workerCpuMsPerStep, 2)}+${fixed(side.postgresCpuMsPerStep, 2)}`;
    const rows = record.rounds.map((round) => [
      `${round.runs} × ${round.steps}`,
      round.workers,
      fixed(round.stepwise.stepsPerSecond),
      fixed(round.stepwise.commitsPerStep, 2),
      cpu(round.stepwise),
      round.dbos ? fixed(round.dbos.stepsPerSecond) : '—',
      round.dbos ? fixed(round.dbos.commitsPerStep, 2) : '—',
      round.dbos ? cpu(round.dbos) : '—',
      round.dbos ? `${fixed(round.stepwise.stepsPerSecond / round.dbos.stepsPerSecond, 2)}×` : '—',
    ]);
    const shapes = [...new Set(record.rounds.map((round) => `${round.runs} × ${round.steps}`))];
    const at = (shape, workers) =>
      record.rounds.find((r) => `${r.runs} × ${r.steps}` === shape && r.workers === workers);
    const aheadOfDbos = record.rounds.every((r) => r.dbos && r.stepwise.stepsPerSecond >= r.dbos.stepsPerSecond);
    const grows = shapes.map((shape) => {
      const one = at(shape, 1);
      const four = at(shape, 4);
      return `${shape}: ${one && four ? verdict(four.stepwise.stepsPerSecond > one.stepwise.stepsPerSecond) : '—'}`;
    });
    const commits = shapes.map((shape) => {
      const four = at(shape, 4);
      return `${shape}: ${four ? verdict(four.stepwise.commitsPerStep < 1) : '—'}`;
    });
    const takeovers = record.takeovers.map(
      (t) =>
        `TTL ${thousands(t.ttlMs)} ms: ${thousands(t.worst)} ms = ${fixed(t.worst / t.ttlMs, 2)}× (worst of ${t.samples.join(', ')})`,
    );
    return [
      `Load average at the start: ${record.startLoad.map((value) => fixed(value, 2)).join(', ')}. ${record.concurrency} runs at once per worker process; warm-up ${record.warmUpSteps > 0 ? `max(${record.concurrency}, ⌈${record.warmUpSteps} / steps⌉) runs of the round's shape per process` : 'none'}. CPU ms/step: the worker processes' + the Postgres server's.`,
      '',
      table(
        [
          'runs × steps',
          'workers',
          'Stepwise steps/s',
          'commits/step',
          'CPU ms/step',
          'DBOS steps/s',
          'commits/step',
          'CPU ms/step',
          'Stepwise / DBOS',
        ],
        rows,
      ),
      '',
      `Stepwise ≥ DBOS at every worker count: ${record.rounds.some((r) => r.dbos) ? verdict(aheadOfDbos) : '— (DBOS not run)'}. More steps/s at 4 workers than at 1: ${grows.join('; ')}. Fewer than one commit per step at 4 workers: ${commits.join('; ')}.`,
      ...(takeovers.length > 0 ? ['', `Takeover after a SIGKILL (target < 2× the TTL): ${takeovers.join('; ')}.`] : []),
    ].join('\n');
  },
  chaos: (record) => {
    const kinds = Object.entries(record.tally).map(
      ([kind, statuses]) =>
        `${kind}: ${Object.entries(statuses)
          .map(([status, count]) => `${count} ${status}`)
          .join(', ')}`,
    );
    const reconciling = record.tally.reconciling ?? {};
    const reconcilingRuns = Object.values(reconciling).reduce((sum, count) => sum + count, 0);
    return [
      table(
        ['runs × steps', 'workers', 'lease TTL', 'seconds', 'SIGKILLs', 'paused', 'Postgres restarts'],
        [
          [
            `${record.runs} × ${record.steps}`,
            record.workers,
            `${thousands(record.ttlMs)} ms`,
            fixed(record.seconds),
            record.killed,
            record.pausedMs > 0 ? `1 worker, ${thousands(record.pausedMs)} ms` : 'none',
            record.postgresRestarts,
          ],
        ],
      ),
      '',
      table(
        [
          'lost',
          'stuck',
          'doubled',
          're-asked (by the paused worker)',
          'E309',
          'E309 never started',
          'reconciling runs completed',
        ],
        [
          [
            record.lost,
            record.stuck,
            record.doubled,
            `${record.reAsked} (${record.reAskedByPaused})`,
            record.interrupted,
            record.neverStarted,
            `${reconciling.completed ?? 0} of ${reconcilingRuns}`,
          ],
        ],
      ),
      '',
      `Runs by kind and status: ${kinds.join('; ')}.`,
      ...(record.otherFailures.length > 0
        ? ['', 'Failed otherwise:', '', ...record.otherFailures.map((failure) => `- \`${failure}\``)]
        : []),
    ].join('\n');
  },
  'step-cost': (record) =>
    [
      `${thousands(record.steps)} no-op steps through \`dagEngine\` (concurrency ${record.concurrency} for the fan-out), µs per step, median of ${record.rounds} interleaved rounds:`,
      '',
      table(
        [
          'shape',
          'tool',
          'memory',
          '`NORMAL`',
          '`FULL`',
          '`NORMAL` batched',
          '`FULL` batched',
          '`NORMAL` / memory',
          'target at `NORMAL`',
        ],
        record.rows.map((row) => [
          row.shape,
          row.tool,
          row['memory µs/step'],
          row['NORMAL µs/step'],
          row['FULL µs/step'],
          row['NORMAL batched'],
          row['FULL batched'],
          row['NORMAL / memory'],
          row.target || '—',
        ]),
      ),
    ].join('\n'),
  'chain-floor': (record) => {
    const rows = record.chain.map((row) => [
      thousands(row.steps),
      row.synchronous,
      fixed(row.engine),
      fixed(row.floor),
      `${fixed(row.engine / row.floor, 2)}×`,
      fixed(row.store),
      `${fixed(row.store / row.floor, 2)}×`,
      fixed(row.storeCpu - row.floorCpu),
      `${fixed(row.pagesPerCommit, 2)} (${fixed(row.floorPagesPerCommit, 2)})`,
    ]);
    const fanOut = record.fanOut.map((row) => `${fixed(row.perStep)} µs/step (CPU ${fixed(row.cpu)})`).join(', ');
    return [
      table(
        [
          'steps',
          'synchronous',
          'engine µs/step',
          'floor µs/step',
          'engine / floor',
          'store alone µs/step',
          'store / floor',
          'store CPU beyond the floor, µs/step',
          'pages per commit (floor)',
        ],
        rows,
      ),
      '',
      `The \`'batched'\` fan-out (${thousands(record.fanOut[0].steps)} steps, NORMAL): ${fanOut}.`,
    ].join('\n');
  },
  'output-bytes': (record) => {
    // Results written before the bench named its own checkout hold it as `HEAD`.
    const ours = record.ours ?? 'HEAD';
    const noOutput = record.noOutput?.checkouts.find((entry) => entry.checkout === ours);
    return [
      table(
        [
          'output',
          'Stepwise file/steps (marginal)',
          'SqliteSaver file/steps (marginal)',
          '× SqliteSaver (marginal)',
          'limit 1.5 × output + 1 KB',
        ],
        record.rows.map((row) => [
          row.output,
          `${thousands(row[ours])} (${thousands(row[`${ours} marginal`])})`,
          `${thousands(row.SqliteSaver)} (${thousands(row['SqliteSaver marginal'])})`,
          `${row['× SqliteSaver']} (${row['× SqliteSaver marginal']})`,
          row['limit 1.5×size+1 KB'] || '—',
        ]),
      ),
      ...(record.rows[0]?.[`${ours} journal pages`]
        ? [
            '',
            `The journal's pages in each ${thousands(record.steps)}-step file, by \`dbstat\`: pages, and bytes left unused in them (share of their bytes):`,
            '',
            table(
              ['output', '`events` pages', 'unused', '`event_chunks` pages', 'unused'],
              record.rows.map((row) => {
                const use = (name) => {
                  const entry = row[`${ours} journal pages`].find((table) => table.name === name);
                  return entry
                    ? [
                        thousands(entry.pages),
                        `${thousands(entry.unused)} (${fixed((100 * entry.unused) / entry.bytes, 0)}%)`,
                      ]
                    : ['—', '—'];
                };
                return [row.output, ...use('events'), ...use('event_chunks')];
              }),
            ),
          ]
        : []),
      ...(noOutput
        ? [
            '',
            `A ${thousands(record.noOutput.steps)}-step chain whose tool returns nothing: ${thousands(noOutput.bytes)} bytes of database, ${thousands(noOutput.perStep)} bytes per step (target ≤ ${thousands(record.noOutput.target)}: ${verdict(noOutput.perStep <= record.noOutput.target)}); by \`dbstat\`, bytes per step: ${noOutput.tables.map((entry) => `\`${entry.name}\` ${thousands(entry.perStep)}`).join(', ')}.`,
          ]
        : []),
    ].join('\n');
  },
  scale: (record) => {
    const [first, last] = [record.sizes[0], record.sizes.at(-1)];
    const storeName = (store) => (store === 'sqlite' ? 'SQLite `NORMAL`' : 'memory');
    const measured = (row) => [
      fixed(row.micros),
      fixed(row.cpuMicros),
      `${fixed(row.peakMb, 0)} (${row.peakRange.map((mb) => fixed(mb, 0)).join('–')})`,
      fixed(row.liveMb, 0),
    ];
    const columns = ['µs per step', 'CPU µs per step', 'peak RSS MB (range)', 'live heap MB'];
    const ratios = record.ratios.map(
      (ratio) =>
        `${ratio.shape} on ${storeName(ratio.store)} ${fixed(ratio.wall, 2)} (CPU ${fixed(ratio.cpu, 2)}), ${verdict(ratio.met)}`,
    );
    const peaks = record.peaks.map((peak) => `${peak.shape} ${fixed(peak.peakMb, 0)} MB, ${verdict(peak.met)}`);
    return [
      `No-op steps through \`dagEngine\` (default concurrency), one child process per run after ${record.warmUp.runs} warm-up runs of ${thousands(record.warmUp.steps)} steps in it, median of ${record.rounds} interleaved rounds. Peak RSS: the process's high-water mark; live heap: the heap in use after a full collection at the end, the result still held:`,
      '',
      table(
        ['shape', 'store', 'steps', ...columns],
        record.rows.map((row) => [row.shape, storeName(row.store), thousands(row.steps), ...measured(row)]),
      ),
      '',
      `µs per step at ${thousands(last)} steps / at ${thousands(first)} (target ≤ ${record.targets.ratio}): ${ratios.join('; ')}. Peak RSS at ${thousands(last)} steps on SQLite (target < ${record.targets.peakMb} MB): ${peaks.join('; ')}.`,
      '',
      `${thousands(last)} steps on SQLite \`NORMAL\`, each returning ${thousands(record.outputBytes)} bytes, every output kept (\`retainOutputs: 'all'\`, the default) or only those a pending step references (\`'referenced'\`):`,
      '',
      table(
        ['shape', '`retainOutputs`', ...columns],
        record.outputs.map((row) => [row.shape, `\`'${row.retainOutputs}'\``, ...measured(row)]),
      ),
    ].join('\n');
  },
  'fixed-cost': (record) => {
    const runsTable = (rows) =>
      table(
        ['contender', 'ms per one-step run', 'vs Mastra', 'vs LangGraph', 'CPU ms per run', 'CPU vs Mastra'],
        rows.map((row) => [
          row.contender,
          row['ms/run'],
          row['vs Mastra'],
          row['vs LangGraph'],
          row['CPU ms/run'] ?? '—',
          row['CPU vs Mastra'] ?? '—',
        ]),
      );
    return [
      ...(record.steady
        ? ['With `gc()` before each round of runs (the protocol; the target is judged here):', '']
        : []),
      runsTable(record.runs),
      ...(record.steady
        ? [
            '',
            'The same runs in a steady state, with no collection forced between rounds:',
            '',
            runsTable(record.steady),
          ]
        : []),
      '',
      record.creations.map((row) => `Creating \`dagEngine\` + \`MemoryStore\`: ${fixed(row.ms, 4)} ms.`).join(' '),
    ].join('\n');
  },
  'validate-plan': (record) =>
    [
      table(
        Object.keys(record.rows[0]),
        record.rows.map((row) => Object.values(row)),
      ),
      '',
      ...Object.entries(record.what).map(([shape, what]) => `- \`${shape}\`: ${what}`),
      '',
      `ms: wall-clock median of ${record.rounds} rounds; MB: peak RSS of the process (node, the plan and validation); MB before: RSS with the plan built, before validating; CPU ms: user + system time of the same calls (all threads, GC included); cold: the first call in the process, before the warm-up. All shapes within target: ${record.allMet ? 'yes' : 'no'}.`,
    ].join('\n'),
  peers: (record) =>
    [
      table(
        ['shape', 'steps', 'durability', 'peer', 'ours µs/step', 'peer µs/step', 'ours / peer'],
        record.rows.map((row) => [
          row.shape,
          thousands(row.steps),
          row.durability,
          row.peer,
          row['ours µs/step'],
          row['peer µs/step'],
          row['ours / peer'] || '—',
        ]),
      ),
      ...((record.curve ?? []).length === 0
        ? []
        : [
            '',
            'LangGraph above the sizes it runs in the table (MemorySaver, one run per size, ours on MemoryStore beside it):',
            '',
            table(
              ['shape', 'steps', 'LangGraph µs/step', 'ours µs/step', 'ours / LangGraph'],
              record.curve.map((row) => [
                row.shape,
                thousands(row.steps),
                row['LangGraph µs/step'],
                row['ours µs/step'] || '—',
                row['ours / LangGraph'] || '—',
              ]),
            ),
          ]),
    ].join('\n'),
};

const readmes = [
  join(root, 'bench', 'README.md'),
  ...readdirSync(join(root, 'packages')).map((name) => join(root, 'packages', name, 'README.md')),
].filter((path) => existsSync(path));

const block = /<!-- bench:([\w-]+) -->\n[\s\S]*?<!-- \/bench:\1 -->/g;
const only = new Set(process.argv.slice(2));
let missing = 0;
for (const path of readmes) {
  const before = readFileSync(path, 'utf8');
  const after = before.replace(block, (whole, name) => {
    if (only.size > 0 && !only.has(name)) return whole;
    const file = join(results, `${name}.json`);
    // A `--before` run's results (`<bench>-before-after`) render as the bench's own do.
    const render = renderers[name] ?? renderers[name.replace(/-before-after$/, '')];
    if (!render || !existsSync(file)) {
      console.warn(`${path}: no ${render ? `results (${file})` : 'renderer'} for bench:${name}; left as it is`);
      missing++;
      return whole;
    }
    const record = JSON.parse(readFileSync(file, 'utf8'));
    return `<!-- bench:${name} -->\n${provenance(record)}\n\n${render(record)}\n<!-- /bench:${name} -->`;
  });
  if (after !== before) {
    writeFileSync(path, after);
    console.log(`rewrote ${path.slice(root.length + 1)}`);
  }
}
process.exitCode = missing > 0 ? 1 : 0;

// Rewrites the benchmark figures in the READMEs from the benches' own output: every block between
// `<!-- bench:<name> -->` and `<!-- /bench:<name> -->` in a package README (or bench/README.md)
// becomes the table rendered from bench/results/<name>.json, which the bench wrote on its last run
// (see bench/_protocol.mjs). A block whose results are missing is left as it is, and named.
//
//   node scripts/bench-figures.mjs            rewrite every block it has results for
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(new URL('..', import.meta.url).pathname);
const results = join(root, 'bench', 'results');

const fixed = (value, digits = 1) => Number(value).toFixed(digits);
const thousands = (value) => Math.round(value).toLocaleString('en');
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
  'output-bytes': (record) =>
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
        `${thousands(row.HEAD)} (${thousands(row['HEAD marginal'])})`,
        `${thousands(row.SqliteSaver)} (${thousands(row['SqliteSaver marginal'])})`,
        `${row['× SqliteSaver']} (${row['× SqliteSaver marginal']})`,
        row['limit 1.5×size+1 KB'] || '—',
      ]),
    ),
  'fixed-cost': (record) =>
    [
      table(
        ['contender', 'ms per one-step run', 'vs Mastra', 'vs LangGraph', 'CPU ms per run', 'CPU vs Mastra'],
        record.runs.map((row) => [
          row.contender,
          row['ms/run'],
          row['vs Mastra'],
          row['vs LangGraph'],
          row['CPU ms/run'] ?? '—',
          row['CPU vs Mastra'] ?? '—',
        ]),
      ),
      '',
      record.creations.map((row) => `Creating \`dagEngine\` + \`MemoryStore\`: ${fixed(row.ms, 4)} ms.`).join(' '),
    ].join('\n'),
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
let missing = 0;
for (const path of readmes) {
  const before = readFileSync(path, 'utf8');
  const after = before.replace(block, (whole, name) => {
    const file = join(results, `${name}.json`);
    const render = renderers[name];
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

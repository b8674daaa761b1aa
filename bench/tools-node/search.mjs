// file_search over a generated 20,000-file tree against `grep -rn` in the same run (target: within 3×),
// and file_edit on a 5 MB file against a bare read + replace + write. Tools are called through the
// core kernel (callTool), as an engine would call them.
// Protocol (bench/README.md): gc() before each timed run, a warm-up run first, the contenders
// interleaved run by run, the median; what it prints is written to bench/results/search.json.
//
//   node bench/tools-node/search.mjs
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, ToolRegistry } from '@stepwise/core';
import { callTool, RunJournal } from '@stepwise/core/engine';
import { nodeTools } from '@stepwise/tools-node';
import { machineLine, median, requireGc, writeResults } from '../_protocol.mjs';

requireGc();

const FILES = 20_000;
const DIRECTORIES = 200;
const RUNS = 5;

const base = mkdtempSync(join(tmpdir(), 'stepwise-bench-tools-'));
const tree = join(base, 'tree');

function generateTree() {
  let needles = 0;
  for (let directory = 0; directory < DIRECTORIES; directory++) {
    const path = join(tree, `package${directory % 20}`, `module${directory}`);
    mkdirSync(path, { recursive: true });
    for (let index = 0; index < FILES / DIRECTORIES; index++) {
      const lines = [];
      for (let line = 0; line < 60; line++)
        lines.push(`const value${line} = compute(${line}, "${directory}-${index}"); // line ${line}`);
      if ((directory * 100 + index) % 97 === 0) {
        lines.splice(30, 0, '// TODO: remove the needle before release');
        needles++;
      }
      writeFileSync(join(path, `file${index}.ts`), `${lines.join('\n')}\n`);
    }
  }
  return needles;
}

let sequence = 0;
async function call(registry, journal, tool, args) {
  sequence++;
  const outcome = await callTool(
    { stepId: `bench${sequence}`, tool, args, attempt: 1, executionId: `bench${sequence}` },
    { runId: 'bench', journal, registry, workspace: base },
  );
  if (outcome.status !== 'succeeded') throw new Error(`${tool} failed: ${JSON.stringify(outcome.error)}`);
  return outcome.output;
}

try {
  const needles = generateTree();
  const registry = new ToolRegistry();
  await registry.use(nodeTools({ workspace: base }));
  const journal = new RunJournal({ runId: 'bench', store: new MemoryStore() });

  console.log(`${machineLine()} at the start`);
  console.log(`tree: ${FILES} files in ${DIRECTORIES} directories, ${needles} contain the needle`);

  // Warm the page cache for both contenders.
  spawnSync('grep', ['-rn', 'needle', tree], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  await call(registry, journal, 'file_search', { query: 'needle', path: 'tree', maxResults: 10_000 });

  const grepTimes = [];
  const searchTimes = [];
  let grepLines = 0;
  let searchMatches = 0;
  for (let run = 0; run < RUNS; run++) {
    globalThis.gc();
    let started = performance.now();
    const grep = spawnSync('grep', ['-rn', 'needle', tree], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    grepTimes.push(performance.now() - started);
    grepLines = grep.stdout.trim().split('\n').filter(Boolean).length;

    globalThis.gc();
    started = performance.now();
    const output = await call(registry, journal, 'file_search', { query: 'needle', path: 'tree', maxResults: 10_000 });
    searchTimes.push(performance.now() - started);
    searchMatches = output.matches.length;
  }
  const grepMedian = median(grepTimes);
  const searchMedian = median(searchTimes);
  const ratio = searchMedian / grepMedian;
  console.log('\nfile_search vs grep -rn (literal, whole tree, median of 5)');
  console.log(`  grep -rn     ${grepMedian.toFixed(1).padStart(8)} ms   ${grepLines} lines`);
  console.log(`  file_search  ${searchMedian.toFixed(1).padStart(8)} ms   ${searchMatches} matches`);
  console.log(`  ratio        ${ratio.toFixed(2)}× grep (target ≤ 3×) ${ratio <= 3 ? 'OK' : 'OVER TARGET'}`);
  if (grepLines !== searchMatches)
    console.log(`  WARNING: grep found ${grepLines} lines, file_search ${searchMatches}`);

  const regexTimes = [];
  const grepRegexTimes = [];
  for (let run = 0; run < RUNS; run++) {
    globalThis.gc();
    let started = performance.now();
    spawnSync('grep', ['-rnE', 'TODO: [[:alnum:]_]+ the ne+dle', tree], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    grepRegexTimes.push(performance.now() - started);
    globalThis.gc();
    started = performance.now();
    await call(registry, journal, 'file_search', {
      query: 'TODO: \\w+ the ne+dle',
      regex: true,
      path: 'tree',
      maxResults: 10_000,
    });
    regexTimes.push(performance.now() - started);
  }
  console.log('\nfile_search regex vs grep -rnE (median of 5)');
  console.log(`  grep -rnE    ${median(grepRegexTimes).toFixed(1).padStart(8)} ms`);
  console.log(`  file_search  ${median(regexTimes).toFixed(1).padStart(8)} ms`);
  console.log(`  ratio        ${(median(regexTimes) / median(grepRegexTimes)).toFixed(2)}× grep`);

  // file_edit on a 5 MB file.
  const lines = [];
  for (let index = 1; index <= 108_000; index++) lines.push(`line ${index}: ${'lorem ipsum '.repeat(3)}`);
  const big = join(base, 'big.txt');
  writeFileSync(big, `${lines.join('\n')}\n`);
  const size = readFileSync(big).length;
  const editTimes = [];
  const bareTimes = [];
  for (let run = 0; run < RUNS; run++) {
    const [from, to] =
      run % 2 === 0 ? ['line 52500: ', 'line 52500 (edited): '] : ['line 52500 (edited): ', 'line 52500: '];
    globalThis.gc();
    let started = performance.now();
    const output = await call(registry, journal, 'file_edit', {
      path: 'big.txt',
      edits: [{ search: from, replace: to }],
    });
    editTimes.push(performance.now() - started);
    if (!output.diff.includes('@@ -52497,7 +52497,7 @@')) throw new Error('unexpected diff');

    // The bare peer: no sandbox, no uniqueness check, no diff, no atomic rename, no fsync.
    globalThis.gc();
    started = performance.now();
    const text = await readFile(big, 'utf8');
    await writeFile(big, text.replace('line 1000: ', 'line 1000: '));
    bareTimes.push(performance.now() - started);
  }
  console.log(`\nfile_edit on a ${(size / 1024 / 1024).toFixed(1)} MB file, one edit in the middle (median of 5)`);
  console.log(`  read+replace+write  ${median(bareTimes).toFixed(1).padStart(8)} ms`);
  console.log(
    `  file_edit           ${median(editTimes).toFixed(1).padStart(8)} ms   (exact-once check, atomic write + fsync, unified diff)`,
  );
  console.log(`  ratio               ${(median(editTimes) / median(bareTimes)).toFixed(2)}×`);
  console.log(`${machineLine()} at the end`);
  writeResults('search', {
    files: FILES,
    directories: DIRECTORIES,
    needles,
    runs: RUNS,
    literal: {
      grep: grepMedian.toFixed(1),
      search: searchMedian.toFixed(1),
      grepLines,
      searchMatches,
      ratio: ratio.toFixed(2),
      met: ratio <= 3,
    },
    regex: {
      grep: median(grepRegexTimes).toFixed(1),
      search: median(regexTimes).toFixed(1),
      ratio: (median(regexTimes) / median(grepRegexTimes)).toFixed(2),
    },
    edit: {
      megabytes: (size / 1024 / 1024).toFixed(1),
      bare: median(bareTimes).toFixed(1),
      edit: median(editTimes).toFixed(1),
      ratio: (median(editTimes) / median(bareTimes)).toFixed(2),
    },
  });
} finally {
  rmSync(base, { recursive: true, force: true });
}

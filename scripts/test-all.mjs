// `npm test`: biome, the function-length limit, then turbo's build/typecheck/lint/test pipeline, streamed as it runs,
// then the checks of the built packages as users install them (optional peers stay optional; the packed tarballs
// installed from the npm registry), ending with one line that totals every package's vitest results.
import { spawn } from 'node:child_process';

function run(command, args) {
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    for (const stream of [child.stdout, child.stderr]) {
      stream.on('data', (chunk) => {
        output += chunk;
        (stream === child.stdout ? process.stdout : process.stderr).write(chunk);
      });
    }
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

const biome = await run('npx', ['biome', 'check', '.']);
if (biome.code !== 0) process.exit(biome.code);
// packages/*/src stays readable: no function over 80 lines, no class over 300 (the longest are
// listed), and no object hands itself (`this`) to a helper that calls back into it.
const lengths = await run('node', ['scripts/function-lengths.mjs', '5']);
if (lengths.code !== 0) process.exit(lengths.code);
// Two tasks at a time: CI has 2 cores, and the process-heavy suites (Postgres, SIGKILL, Chromium)
// time out when every package's tests run at once.
const turbo = await run('npx', [
  'turbo',
  'run',
  'build',
  'typecheck',
  'lint',
  'test',
  '--output-logs=full',
  '--concurrency=2',
  // Every package's tests run even after one fails, so one run shows every failure.
  '--continue',
]);
const totals = { passed: 0, failed: 0, skipped: 0 };
// vitest's summary line per package: "Tests  12 failed | 40 passed | 2 skipped (54)".
const plain = turbo.output.replace(/\u001b\[[0-9;]*m/g, '');
for (const line of plain.split('\n')) {
  const match = /\bTests\s+(.*)\(\d+\)\s*$/.exec(line);
  if (!match) continue;
  for (const [, count, kind] of match[1].matchAll(/(\d+) (passed|failed|skipped|todo)/g)) {
    if (kind in totals) totals[kind] += Number(count);
  }
}
// After the build: no package imports an optional peer when it loads or names one in its types (fast, names the
// file), then the packages installed from their tarballs as a user installs them (a few minutes).
const peers = await run('node', ['scripts/check-optional-peers.mjs']);
const packed =
  peers.code === 0 ? await run('node', ['scripts/check-packed-packages.mjs']) : { code: 1, output: 'skipped' };
if (peers.code !== 0) console.log('check-packed-packages: skipped, fix the optional peers first');
console.log(`\nTests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(turbo.code || peers.code || packed.code);

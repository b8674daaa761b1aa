// Runs every benchmark under bench/<area>/*.mjs, one process each, and prints their reports.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('.', import.meta.url).pathname;
const only = process.argv.slice(2);
let failed = 0;
for (const area of readdirSync(root).sort()) {
  const dir = join(root, area);
  if (!statSync(dir).isDirectory() || area === 'node_modules' || area === 'results') continue;
  if (only.length > 0 && !only.includes(area)) continue;
  for (const file of readdirSync(dir)
    .filter((name) => name.endsWith('.mjs') && !name.startsWith('_'))
    .sort()) {
    console.log(`\n=== bench/${area}/${file}`);
    const result = spawnSync(process.execPath, ['--expose-gc', join(dir, file)], { stdio: 'inherit', cwd: dir });
    if (result.status !== 0) failed++;
  }
}
if (failed > 0) {
  console.error(`\n${failed} benchmark(s) failed`);
  process.exit(1);
}

// `npm run lint` in a package: packs it once, as npm would publish it, and checks that tarball with publint
// (strict: warnings fail too) and arethetypeswrong (node16 profile). Each used to pack the package on its own.
// Both run even when the first fails, so one run shows every problem.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'stepwise-lint-'));
let failed = false;
try {
  const [packed] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', folder], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  const tarball = join(folder, packed.filename);
  for (const [command, ...args] of [
    [bin('publint'), '--strict', tarball],
    [bin('attw'), tarball, '--profile', 'node16'],
  ]) {
    failed = spawnSync(command, args, { stdio: 'inherit' }).status !== 0 || failed;
  }
} finally {
  rmSync(folder, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;

// `npm run test:quick [-- vitest arguments]`: every package's unit tests in one vitest process, from the
// sources (no build), without the files a package's vitest config lists as `fullOnly` (Postgres, Chromium,
// tmux, the OS sandbox, child processes of the built packages, SIGKILL). `npm test` runs everything.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const started = performance.now();
const child = spawn('npx', ['vitest', 'run', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, STEPWISE_TEST_QUICK: '1' },
});
child.on('close', (code, signal) => {
  console.log(`test:quick: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  process.exit(code ?? (signal ? 1 : 0));
});

import { readFile, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnNode, temporaryDirectory } from './helpers.js';

// A child that says it is up, then answers each line on its stdin at once.
const ECHO = `process.stdout.write('up\\n');
process.stdin.setEncoding('utf8').on('data', () => process.stdout.write('ready\\n'));
`;

describe('spawnNode().waitFor', () => {
  it('finds a line the child printed in time although this process was blocked past the deadline', async () => {
    const script = join(temporaryDirectory('spawn-helper-'), 'echo.mjs');
    writeFileSync(script, ECHO);
    const child = spawnNode(script, []);
    try {
      await child.waitFor((line) => line === 'up', 60_000);
      const waited = child.waitFor((line) => line === 'ready', 300);
      const stdin = child.process.stdin;
      if (!stdin) throw new Error('the child has no stdin');
      stdin.write('go\n');
      // Blocked inside an I/O callback (as by a synchronous SQLite busy wait of another store) for
      // longer than the wait while the child answers: the timer then fires before the waiting line is read.
      await new Promise<void>((resolve) =>
        readFile(script, () => {
          const end = Date.now() + 3000;
          while (Date.now() < end) {}
          resolve();
        }),
      );
      await expect(waited).resolves.toBe('ready');
    } finally {
      child.process.kill('SIGKILL');
      await child.exited;
    }
  });
});

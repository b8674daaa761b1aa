import { spawn } from 'node:child_process';
import { readFile } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { until } from './fixtures.js';

describe('until', () => {
  it('sees what a child printed in time although this process was blocked past the deadline', async () => {
    const child = spawn(process.execPath, ['-e', "process.stdin.once('data', () => process.stdout.write('ready\\n'))"]);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (text: string) => {
        output += text;
      });
      const waited = until(() => output.includes('ready'), 'the child to answer', 300);
      child.stdin.write('go\n');
      // Blocked inside an I/O callback for longer than the wait while the child answers: the
      // polling timer then fires before the answer waiting in the pipe is read.
      await new Promise<void>((resolve) =>
        readFile(fileURLToPath(import.meta.url), () => {
          const end = Date.now() + 3000;
          while (Date.now() < end) {}
          resolve();
        }),
      );
      await expect(waited).resolves.toBeUndefined();
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });

  it('still gives up, naming what it waited for', async () => {
    await expect(until(() => false, 'nothing', 20)).rejects.toThrow('timed out waiting for nothing');
  });
});

import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonLines, useCliWorkspace } from './helpers.js';

const cli = useCliWorkspace();

describe('retry.on', () => {
  it('runs a command that exits non-zero again when the step lists E304, and not when it does not', async () => {
    // Exits 1 the first time (leaving a marker), 0 afterwards: a real child process each attempt.
    await writeFile(
      path.join(cli.directory, 'flaky.js'),
      "const fs = require('node:fs');\nconst marker = process.argv[2];\nif (!fs.existsSync(marker)) { fs.writeFileSync(marker, ''); console.error('not yet'); process.exit(1); }\n",
    );
    const plan = (marker: string, on: string[] | undefined) => ({
      id: `flaky-${marker}`,
      steps: [
        {
          id: 'flaky',
          tool: 'run_command',
          args: { command: ['node', 'flaky.js', marker] },
          retry: { maxAttempts: 3, initialDelayMs: 10, ...(on ? { on } : {}) },
        },
      ],
    });
    await cli.write('listed.json', plan('marker-listed', ['E304']));
    const listed = await cli.stepwise(['run', 'listed.json', '--json', '--approve', 'auto']);
    expect(listed.code, listed.stdout).toBe(0);
    const events = parseJsonLines(listed.stdout);
    const retries = events.filter((event) => event.type === 'step-retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ stepId: 'flaky', attempt: 1, nextAttempt: 2, error: { code: 'E304' } });
    expect(events.filter((event) => event.type === 'tool-call')).toHaveLength(2);

    await cli.write('unlisted.json', plan('marker-unlisted', undefined));
    const unlisted = await cli.stepwise(['run', 'unlisted.json', '--json', '--approve', 'auto']);
    expect(unlisted.code).toBe(30);
    expect(parseJsonLines(unlisted.stdout).some((event) => event.type === 'step-retry')).toBe(false);
  }, 90_000);
});

import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MemoryStore, ToolRegistry } from '@stepwise/core';
import { callTool, type LiveListener, RunJournal, type ToolOutputEvent } from '@stepwise/core/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeTools } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

/** `run_command` shows a real child's output through the run's live channel while the child runs. */

const PHRASE = 'tranquil-otter-lantern-5521';
let harness: Harness;

beforeAll(async () => {
  process.env.STEPWISE_LIVE_TOKEN = PHRASE;
  harness = await createHarness();
  await writeFile(
    path.join(harness.workspace, 'gated.js'),
    [
      "const fs = require('node:fs');",
      "process.stdout.write('first line\\n');",
      // Waits until the test has seen the first line: only live output can let it go on.
      "const wait = setInterval(() => { if (fs.existsSync('gate')) { clearInterval(wait); process.stdout.write('second line\\n'); } }, 20);",
      'setTimeout(() => process.exit(3), 20000).unref();',
    ].join('\n'),
  );
  await writeFile(
    path.join(harness.workspace, 'split.js'),
    [
      'const phrase = process.env.STEPWISE_LIVE_TOKEN;',
      "process.stdout.write('phrase: ' + phrase.slice(0, 9));",
      "setTimeout(() => process.stdout.write(phrase.slice(9) + '\\n'), 40);",
      'setTimeout(() => process.stdout.write(Buffer.from([0x63, 0x61, 0x66, 0xc3])), 80);',
      'setTimeout(() => process.stdout.write(Buffer.from([0xa9, 0x0a])), 120);',
    ].join('\n'),
  );
});

afterAll(async () => {
  delete process.env.STEPWISE_LIVE_TOKEN;
  await harness.cleanup();
});

async function callWithLive(args: Record<string, unknown>, listener: LiveListener) {
  const registry = new ToolRegistry();
  await registry.use(
    nodeTools({ workspace: harness.workspace, commands: { allow: ['node'], env: { allow: ['STEPWISE_LIVE_TOKEN'] } } }),
  );
  const journal = new RunJournal({ runId: 'run_live', store: new MemoryStore() });
  journal.live.subscribe(listener);
  return callTool(
    { stepId: 'build', tool: 'run_command', args, attempt: 1, executionId: 'x1' },
    {
      runId: 'run_live',
      journal,
      registry,
      workspace: harness.workspace,
      approvals: { policy: { effects: { exec: 'auto', destructive: 'auto' } } },
    },
  );
}

describe('run_command live output', () => {
  it("streams a child's stdout before the child exits", async () => {
    const seen: ToolOutputEvent[] = [];
    const outcome = await callWithLive({ command: ['node', 'gated.js'] }, (event) => {
      if (event.type !== 'tool-output') return;
      seen.push(event);
      if (event.text.includes('first line') && !existsSync(path.join(harness.workspace, 'gate'))) {
        void writeFile(path.join(harness.workspace, 'gate'), '');
      }
    });
    expect(outcome.status).toBe('succeeded');
    expect(seen.map((event) => event.text).join('')).toBe('first line\nsecond line\n');
    expect(seen[0]).toMatchObject({ runId: 'run_live', stepId: 'build', executionId: 'x1', stream: 'stdout' });
  });

  it('scrubs a host secret printed in two writes and keeps a character split between reads whole', async () => {
    const seen: string[] = [];
    const outcome = await callWithLive({ command: ['node', 'split.js'] }, (event) => {
      seen.push(event.text);
    });
    expect(outcome.status).toBe('succeeded');
    const shown = seen.join('');
    expect(shown).not.toContain(PHRASE.slice(0, 9));
    expect(shown).not.toContain(PHRASE.slice(9));
    expect(shown).toContain('phrase: [REDACTED]\n');
    expect(shown).toContain('café\n');
    expect(shown).not.toContain('\uFFFD');
  });
});

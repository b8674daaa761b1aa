import path from 'node:path';
import { approvePlan, type Plan, ToolRegistry } from '@stepwise/core';
import { sequentialEngine } from '@stepwise/engine-sequential';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { describe, expect, it } from 'vitest';
import { userJournalKey } from '../src/journal-key.js';
import { loadPluginModule } from '../src/load-plugins.js';
import { FIXTURES, parseJsonLines, useCliWorkspace } from './helpers.js';

const cli = useCliWorkspace();

describe('a strict run revised without an approval, from the command line', () => {
  it('waits; resume is refused (E003) until stepwise approve <runId> approves the revised plan', async () => {
    await cli.resetCalls();
    const database = path.join(cli.directory, 'revised.db');
    const tools = new ToolRegistry();
    await tools.use(
      await loadPluginModule(path.join(FIXTURES, 'test-plugin.mjs'), FIXTURES, { counterFile: cli.counterFile }),
    );
    const plan: Plan = {
      id: 'release',
      steps: [{ id: 'build', tool: 'sleep_ms', args: { ms: 1500, label: 'build' } }],
    };
    const store = createSqliteStore({ path: database });
    let runId: string;
    try {
      // Keyed as the CLI keys its runs (the user's key), so that stepwise resume accepts the journal.
      const handle = sequentialEngine({ tools, store, journalKey: await userJournalKey() }).run(plan, {
        authorization: approvePlan(plan, { by: 'alice' }),
      });
      await handle.revise({
        edits: [{ op: 'add', step: { id: 'notes', tool: 'sleep_ms', args: { ms: 1, label: 'notes' } } }],
        by: 'alice',
        reason: 'release notes too',
      });
      const waiting = await handle.result;
      expect(waiting.status).toBe('waiting');
      runId = waiting.runId;
    } finally {
      await store.close();
    }
    expect(await cli.readCalls()).toEqual(['start build', 'end build']);

    const refused = await cli.stepwise(['resume', runId, '--db', database, '--json']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('E003');
    expect(await cli.readCalls()).toEqual(['start build', 'end build']);

    const approved = await cli.stepwise(['approve', runId, '--by', 'bob', '--db', database]);
    expect(approved.code, approved.stderr).toBe(0);
    const resumed = await cli.stepwise([
      'resume',
      runId,
      '--db',
      database,
      '--authorization',
      `${runId}.approval.json`,
      '--json',
    ]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(parseJsonLines(resumed.stdout).at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
    expect(await cli.readCalls()).toEqual(['start build', 'end build', 'start notes', 'end notes']);
  }, 120_000);
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestTools, makePlan } from '@stepwise/core/testing';
import { generateReport } from '@stepwise/dashboard/report';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { userJournalKey } from '../src/journal-key.js';
import { assertBuilt, runCli } from './helpers.js';

const HOSTILE = '</script><img src=x onerror="window.__pwned=1">';

describe('a revised plan in stepwise show and the report', () => {
  const directory = mkdtempSync(path.join(tmpdir(), 'show-revisions-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('lists every revision: who, why, and what changed', async () => {
    assertBuilt();
    const database = path.join(directory, 'runs.db');
    const store = createSqliteStore({ path: database });
    const { registry } = createTestTools();
    const engine = dagEngine({
      tools: registry,
      store,
      // The key stepwise show checks runs with: the user's, as the CLI's runs are keyed.
      journalKey: await userJournalKey(),
      adjust: (step) =>
        step.id === 'build'
          ? {
              action: 'revise',
              reason: `check first ${HOSTILE}`,
              edits: [
                { op: 'add', step: { id: 'check', tool: 'echo', args: {}, dependsOn: ['build'] } },
                { op: 'edit', stepId: 'ship', changes: { dependsOn: ['check'] } },
                { op: 'remove', stepId: 'extra' },
              ],
            }
          : undefined,
    });
    const plan = makePlan([
      { id: 'build', tool: 'echo', args: {} },
      { id: 'ship', tool: 'echo', args: {}, dependsOn: ['build'] },
      { id: 'extra', tool: 'echo', args: {}, dependsOn: ['build'] },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('completed');
    const html = await generateReport(store, result.runId);
    await store.close();

    const shown = await runCli(['show', result.runId, '--db', database], { cwd: directory });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('Revisions');
    expect(shown.stdout).toMatch(
      /revision 1 {2}by adjust .*− extra {2}~ ship \(dependsOn\) {2}\+ check {2}check first/,
    );
    const json = JSON.parse(
      (await runCli(['show', result.runId, '--db', database, '--json'], { cwd: directory })).stdout,
    ) as {
      revisions: { revision: number; by: string; changes: string[] }[];
    };
    expect(json.revisions).toEqual([
      expect.objectContaining({ revision: 1, by: 'adjust', changes: ['− extra', '~ ship (dependsOn)', '+ check'] }),
    ]);

    expect(html).toContain('<section id="revisions-section">');
    expect(html).toContain('+ check');
    expect(html).not.toContain(HOSTILE);
    expect(html).toContain('check first &lt;/script&gt;');
  });
});

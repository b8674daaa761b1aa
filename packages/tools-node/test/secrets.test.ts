import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createRedactor, type Plan, readAll, type StepResult, ToolRegistry } from '@stepwise/core';
import { finishRun, invokeStep, startRun } from '@stepwise/core/engine';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeTools } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

/**
 * A secret in the environment (named secret by the host) and a key in a file read by a
 * step must not reach the journal: a real SQLite store, a real child process, then every
 * way of reading the store back — and the database files' raw bytes — are searched.
 */

const ENV_SECRET = 'correct-horse-battery-staple-7391';
const FILE_KEY = 'sk-proj-Zq8vN3xT6yR1wK5mP9bL2cJ4hG7fD0sA';

let harness: Harness;

beforeAll(async () => {
  // The variable's name does not look secret, so only the host's redactor can catch its value.
  process.env.STEPWISE_DEPLOY_PHRASE = ENV_SECRET;
  harness = await createHarness();
  await writeFile(path.join(harness.workspace, '.env'), `OPENAI_API_KEY=${FILE_KEY}\nMODE=production\n`);
  await writeFile(path.join(harness.workspace, 'config.txt'), `the key is ${FILE_KEY} and nothing else\n`);
  await writeFile(
    path.join(harness.workspace, 'show.js'),
    "console.log('phrase:', process.env.STEPWISE_DEPLOY_PHRASE);\nconsole.log(require('node:fs').readFileSync('config.txt', 'utf8'));\n",
  );
  await writeFile(
    path.join(harness.workspace, 'leak-and-fail.js'),
    "console.error('cannot deploy with', process.env.STEPWISE_DEPLOY_PHRASE); process.exit(2);\n",
  );
});

afterAll(async () => {
  delete process.env.STEPWISE_DEPLOY_PHRASE;
  await harness.cleanup();
});

describe('secrets never reach the journal', () => {
  it('redacts env secrets and file keys from every read-back of a SQLite store', async () => {
    const databasePath = path.join(harness.base, 'store', 'stepwise.db');
    const store = createSqliteStore({ path: databasePath });
    const registry = new ToolRegistry();
    await registry.use(
      nodeTools({
        workspace: harness.workspace,
        commands: { allow: ['node'], env: { allow: ['STEPWISE_DEPLOY_PHRASE'] } },
      }),
    );
    const plan: Plan = {
      id: 'plan_secrets',
      goal: 'touch secrets',
      steps: [
        { id: 'read-env', tool: 'file_read', args: { path: '.env' } },
        { id: 'read-config', tool: 'read_file', args: { path: 'config.txt' } },
        { id: 'search-key', tool: 'file_search', args: { query: 'sk-proj' } },
        { id: 'show', tool: 'run_command', args: { command: ['node', 'show.js'] } },
        { id: 'fail', tool: 'run_command', args: { command: ['node', 'leak-and-fail.js'] } },
      ],
    };
    const redactor = createRedactor({ secretEnv: ['STEPWISE_DEPLOY_PHRASE'] });
    const runId = 'run_secrets';
    const journal = await startRun({ store, runId, plan, engine: 'test', redactor });
    const results: StepResult[] = [];
    for (const step of plan.steps) {
      results.push(
        await invokeStep(
          step,
          { attempt: 1, references: 'literal' },
          {
            runId,
            journal,
            registry,
            workspace: harness.workspace,
            approvals: { policy: { effects: { exec: 'auto' } } },
          },
        ),
      );
    }
    await finishRun(journal, { plan, engine: 'test', status: 'failed', steps: results, durationMs: 1 });

    // The steps really ran and really saw the secrets.
    expect(results.map((result) => result.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
      'succeeded',
      'failed',
    ]);
    expect(results[4]?.error?.code).toBe('E304');
    const shown = results[3]?.output as { stdout: string };
    expect(shown.stdout).toContain('phrase: [REDACTED]');
    expect(JSON.stringify(results)).not.toContain(ENV_SECRET);
    expect(JSON.stringify(results)).not.toContain(FILE_KEY);

    const readBacks: unknown[] = [await readAll(store, runId), await store.getRun(runId), await store.listRuns()];
    for (const result of results) readBacks.push(await store.getExecution(result.executionId));
    const text = JSON.stringify(readBacks);
    expect(text).toContain('file_read');
    expect(text).toContain('cannot deploy with');
    expect(text).not.toContain(ENV_SECRET);
    expect(text).not.toContain(FILE_KEY);
    expect(text).not.toContain('Zq8vN3xT6yR1wK5mP9bL2cJ4hG7fD0sA');
    await store.close();

    // Nothing in the database files either (the WAL included, if one is left).
    const directory = path.dirname(databasePath);
    for (const name of await readdir(directory)) {
      const bytes = await readFile(path.join(directory, name));
      expect(bytes.includes(ENV_SECRET), name).toBe(false);
      expect(bytes.includes(FILE_KEY), name).toBe(false);
    }
  }, 30_000);
});

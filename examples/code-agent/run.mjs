// The code-agent loop fixes a real bug in a small project (project/, copied to a scratch workspace
// first): solve() plans the task, lets the model edit src/ with file_edit, runs `npm test` after
// every attempt, rolls a failed attempt back and retries with the failing tests in the prompt.
// Scripted by default (a fake OpenAI-compatible server on 127.0.0.1 plays the model); with
// STEPWISE_MODEL_URL (plus STEPWISE_MODEL and, when needed, STEPWISE_MODEL_API_KEY) a real model does.
//
//   node examples/code-agent/run.mjs [--workspace <empty dir>]
import { cpSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { solve } from '@stepwise/code-agent';
import { openAICompatible } from '@stepwise/engine-agentic';
import { startFakeOpenAIServer } from '@stepwise/engine-agentic/testing';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { scriptedFixer } from './scripted-fixer.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const flag = process.argv.indexOf('--workspace');
const workspace = flag > 0 ? path.resolve(process.argv[flag + 1]) : mkdtempSync(path.join(tmpdir(), 'code-agent-'));
if (existsSync(workspace) && readdirSync(workspace).length > 0) {
  console.error(`${workspace} is not empty: give an empty or new directory`);
  process.exit(2);
}
cpSync(path.join(here, 'project'), workspace, { recursive: true });

const real = process.env.STEPWISE_MODEL_URL;
const fake = real ? undefined : await startFakeOpenAIServer({ replies: scriptedFixer });
const model = openAICompatible({
  baseURL: real ?? fake.url,
  model: process.env.STEPWISE_MODEL ?? (real ? 'gpt-4o-mini' : 'scripted-fixer'),
  ...(process.env.STEPWISE_MODEL_API_KEY ? { apiKey: process.env.STEPWISE_MODEL_API_KEY } : {}),
  temperature: 0,
});
const database = `${workspace}.stepwise.db`;
const store = createSqliteStore({ path: database });

console.log(`workspace: ${workspace}`);
console.log(`model: ${model.name}${real ? ` at ${real}` : ' (scripted, fake OpenAI-compatible server)'}`);
try {
  const result = await solve({
    task: 'The tests of this project fail. Fix the bug in src/ so that `npm test` passes; do not change the tests.',
    workspace,
    validate: ['npm', 'test'],
    model,
    store,
    maxAttempts: 3,
    onProgress(event) {
      if (event.type === 'plan-ready') {
        console.log(`plan: ${event.plan.steps.map((step) => step.id).join(', ')}`);
      } else if (event.type === 'attempt-end') {
        const { attempt } = event;
        const failing = attempt.validation.failingTests.map((test) => test.name);
        console.log(
          `${attempt.stepId} attempt ${attempt.attempt}: changed ${attempt.changes.modified.join(', ') || 'nothing'}; ` +
            `npm test ${attempt.validation.passed ? 'passed' : `failed (exit ${attempt.validation.exitCode})`}` +
            `${failing.length > 0 ? `; failing: ${failing.join('; ')}` : ''}${attempt.rolledBack ? '; rolled back' : ''}`,
        );
      }
    },
  });
  console.log(result.summary);
  console.log(`journal: ${database} (stepwise show ${result.runId} --db ${database})`);
  process.exitCode = result.status === 'solved' ? 0 : 1;
} finally {
  await store.close();
  await fake?.close();
}

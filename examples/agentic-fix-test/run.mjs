// The agentic engine fixes a failing unit test in a tiny project (project/, copied to a scratch
// workspace first). Scripted by default: an OpenAI-compatible fake server on 127.0.0.1 plays the
// model, which reads the failing test and the source, edits the source with file_edit, runs the
// tests with run_command, and completes. With STEPWISE_MODEL_URL (plus STEPWISE_MODEL and, when
// the endpoint needs one, STEPWISE_MODEL_API_KEY) the same plan runs against a real model.
//
//   node examples/agentic-fix-test/run.mjs [--workspace <empty dir>]
//   STEPWISE_MODEL_URL=http://localhost:11434/v1 STEPWISE_MODEL=qwen2.5-coder:7b node examples/agentic-fix-test/run.mjs
import { cpSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ToolRegistry } from '@stepwise/core';
import { agenticEngine, openAICompatible } from '@stepwise/engine-agentic';
import { startFakeOpenAIServer } from '@stepwise/engine-agentic/testing';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { nodeTools } from '@stepwise/tools-node';

const here = path.dirname(fileURLToPath(import.meta.url));
const flag = process.argv.indexOf('--workspace');
const workspace = flag > 0 ? path.resolve(process.argv[flag + 1]) : mkdtempSync(path.join(tmpdir(), 'agentic-fix-'));
if (existsSync(workspace) && readdirSync(workspace).length > 0) {
  console.error(`${workspace} is not empty: give an empty or new directory`);
  process.exit(2);
}
cpSync(path.join(here, 'project'), workspace, { recursive: true });

/**
 * The scripted model, as a function of the conversation (OpenAI wire format): it reads what the
 * tools returned and decides, like a model would, but deterministically.
 */
function scriptedFixer(request) {
  const messages = request.body?.messages ?? [];
  const turn = messages.filter((message) => message.role === 'assistant').length;
  const toolResults = messages.filter((message) => message.role === 'tool').map((message) => message.content);
  const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
  switch (turn) {
    case 0:
      return call('file_read', { path: 'test/math.test.js' });
    case 1:
      return call('file_read', { path: 'src/math.js' });
    case 2:
      return {
        text: 'The test expects add(2, 3) to be 5, but src/math.js returns a - b. The fix is to return a + b.',
      };
    case 3: {
      const source = JSON.parse(toolResults[1] ?? '{}').contents ?? '';
      const buggy = source.split('\n').find((line) => /return a - b;/.test(line));
      if (!buggy) return { toolCalls: [{ name: 'report_blocked', arguments: { reason: 'no subtraction found' } }] };
      return call('file_edit', {
        path: 'src/math.js',
        edits: [{ search: buggy, replace: buggy.replace('a - b', 'a + b') }],
      });
    }
    case 4:
      return call('run_command', { command: ['node', '--test'] });
    default: {
      const last = toolResults.at(-1) ?? '';
      return last.startsWith('ERROR')
        ? { toolCalls: [{ name: 'report_blocked', arguments: { reason: `tests still fail: ${last.slice(0, 200)}` } }] }
        : call('complete_step', { summary: 'add() subtracted; it now adds. `node --test` passes.' });
    }
  }
}

const real = process.env.STEPWISE_MODEL_URL;
const fake = real ? undefined : await startFakeOpenAIServer({ replies: scriptedFixer });
const model = openAICompatible({
  baseURL: real ?? fake.url,
  model: process.env.STEPWISE_MODEL ?? (real ? 'gpt-4o-mini' : 'scripted-fixer'),
  ...(process.env.STEPWISE_MODEL_API_KEY ? { apiKey: process.env.STEPWISE_MODEL_API_KEY } : {}),
  temperature: 0,
});

const tools = new ToolRegistry();
await tools.use(nodeTools({ workspace, commands: { allow: ['node'] } }));
const database = `${workspace}.stepwise.db`;
const store = createSqliteStore({ path: database });

const engine = agenticEngine({
  model,
  tools,
  store,
  workspace,
  // run_command is an `exec` tool (prompted by default); here it may only run `node`, so it is allowed.
  approvals: { policy: { tools: { run_command: 'auto' } } },
  limits: { maxTurns: 12 },
});

const plan = {
  id: 'fix-failing-test',
  goal: 'Make the failing unit test of this project pass without changing the test.',
  steps: [
    {
      id: 'fix',
      description:
        'The tests in test/ fail. Read the failing test and the source it tests, fix the bug in src/ with file_edit ' +
        '(never edit the test), run the tests with run_command ["node", "--test"], and call complete_step once they pass.',
      tools: ['file_read', 'dir_list', 'file_edit', 'run_command'],
      expect: [{ kind: 'command_succeeds', argv: ['node', '--test'] }],
    },
  ],
};

console.log(`workspace: ${workspace}`);
console.log(`model: ${model.name}${real ? ` at ${real}` : ' (scripted, fake OpenAI-compatible server)'}`);
const handle = engine.run(plan);
for await (const event of handle) {
  if (event.type === 'model-call' && event.response) {
    const calls = event.response.toolCalls.map((call) => `${call.name}(${JSON.stringify(call.arguments)})`);
    console.log(`turn ${event.turn}: ${calls.length > 0 ? calls.join(', ') : `analysis: ${event.response.text}`}`);
  } else if (event.type === 'model-call') {
    console.log(`turn ${event.turn}: model error ${event.error?.code}: ${event.error?.message}`);
  } else if (event.type === 'tool-result') {
    console.log(`  ${event.tool} ${event.status}${event.error ? `: ${event.error.message}` : ''}`);
  } else if (event.type === 'limit-reach') {
    console.log(`  limit reached: ${event.limit} (${event.value})`);
  }
}
const result = await handle.result;
await store.close();
await fake?.close();

const step = result.steps[0];
console.log(
  `run ${result.status}: step ${step?.status}${step?.error ? ` (${step.error.code} ${step.error.message})` : ''}`,
);
if (step?.output) console.log(`summary: ${step.output.summary}`);
console.log(`tokens: ${result.usage?.totalTokens ?? 0}; journal: ${database}`);
process.exit(result.status === 'completed' ? 0 : 1);

// The checks check-packed-packages.mjs runs inside a fresh project where the packed packages are
// installed as a user installs them. CommonJS so that both an ES module (`load` = `import()`) and a
// CommonJS script (`load` = `require`) can run it: `runChecks(scenario, load)` prints one line per
// check ("ok   …" or "FAIL …: why") and sets a non-zero exit code when one fails.
//
// Scenarios: `minimal` (@stepwise/cli with its dependencies only), one per optional peer of the
// cli added on its own, and `full` (every optional peer).
const { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const OPTIONAL_PEERS = [
  '@stepwise/engine-sequential',
  '@stepwise/engine-agentic',
  '@stepwise/code-agent',
  '@stepwise/tools-mcp',
  '@stepwise/store-postgres',
];
// Port 1 on the loopback interface: nothing listens there, so a connection is refused at once.
const UNREACHABLE_POSTGRES = 'postgres://stepwise:secret@127.0.0.1:1/stepwise';
const results = [];

async function check(name, body) {
  try {
    await body();
    results.push(`ok   ${name}`);
  } catch (error) {
    // One line per check: the message and what follows it (a server's stderr…), stack frames left out.
    const lines = String(error?.stack ?? error).split('\n');
    const detail = lines.filter((line) => line.trim() !== '' && !/^\s+at /.test(line)).slice(0, 12);
    results.push(`FAIL ${name}: ${detail.join(' | ')}`);
    process.exitCode = 1;
  }
}

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

function isInstalled(name) {
  return existsSync(path.join(process.cwd(), 'node_modules', name, 'package.json'));
}

function versionOf(name) {
  return JSON.parse(readFileSync(path.join('node_modules', name, 'package.json'), 'utf8')).version;
}

/** A fresh workspace with a package.json in it, removed after `body`. */
async function inWorkspace(body) {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'stepwise-workspace-'));
  writeFileSync(path.join(directory, 'package.json'), '{ "name": "workspace" }\n');
  try {
    return await body(directory);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Resolves to what `promise` rejected with; throws if it resolved. */
async function rejection(promise, what) {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error) => ({ error }),
  );
  if (!('error' in outcome)) {
    await outcome.value?.close?.();
    throw new Error(`${what} succeeded; expected it to fail`);
  }
  return outcome.error;
}

/** `attempt()` must fail with E601 naming `name` and saying how to install it. */
async function expectMissing(cli, name, what, attempt) {
  const { StepwiseError } = cli.core;
  const error = await rejection(attempt(), what);
  assert(
    StepwiseError.isInstance(error) && error.code === 'E601',
    `expected E601, got ${error?.stack ?? String(error)}`,
  );
  assert(error.details?.package === name, `details: ${JSON.stringify(error.details)}`);
  assert(error.message.includes(`npm install ${name}`), error.message);
}

/** A model that must not be called: these checks fail before any model call. */
const unusedModel = {
  name: 'unused',
  generate: async () => {
    throw new Error('the model was called');
  },
};

/** Reads package.json with the dag engine, the Node tools and a SQLite journal: the cli's defaults. */
async function runDagPlan(cli, engine, runOptions = () => ({})) {
  return inWorkspace(async (workspace) => {
    const runner = await cli.createRunner({ engine, workspace });
    try {
      const plan = { id: 'read', steps: [{ id: 'read', tool: 'file_read', args: { path: 'package.json' } }] };
      const result = await runner.run(plan, runOptions(plan)).result;
      assert(result.status === 'completed', JSON.stringify(result));
      assert(result.steps[0].output.contents.includes('workspace'), JSON.stringify(result.steps[0].output));
      assert(runner.store.constructor.name !== 'MemoryStore', `store ${runner.store.constructor.name}`);
    } finally {
      await runner.close();
    }
  });
}

async function minimalChecks(cli, load) {
  await check('no optional peer of the cli was installed', async () => {
    const installed = OPTIONAL_PEERS.filter(isInstalled);
    assert(installed.length === 0, `npm installed ${installed.join(', ')}: a required peer dependency?`);
  });
  await check('createRunner({ engine: "dag" }) runs a plan with the Node tools and SQLite', () =>
    runDagPlan(cli, 'dag'),
  );
  const { createRunner, solve } = cli;
  await check('engine "sequential" without @stepwise/engine-sequential: E601 naming it', () =>
    expectMissing(cli, '@stepwise/engine-sequential', 'createRunner', () =>
      createRunner({ engine: 'sequential', store: 'memory' }),
    ),
  );
  await check('engine "agentic" without @stepwise/engine-agentic: E601 naming it', () =>
    expectMissing(cli, '@stepwise/engine-agentic', 'createRunner', () =>
      createRunner({ engine: 'agentic', store: 'memory', model: unusedModel }),
    ),
  );
  await check('a model endpoint without @stepwise/engine-agentic: E601 naming it', () =>
    expectMissing(cli, '@stepwise/engine-agentic', 'createRunner', () =>
      createRunner({ store: 'memory', model: { baseURL: 'http://127.0.0.1:1/v1', model: 'none' } }),
    ),
  );
  await check('solve() without @stepwise/code-agent: E601 naming it', () =>
    inWorkspace((workspace) =>
      expectMissing(cli, '@stepwise/code-agent', 'solve', () =>
        solve({ task: 'nothing', workspace, validate: ['node', '--version'], model: unusedModel }),
      ),
    ),
  );
  await check('a Postgres store without @stepwise/store-postgres: E601 naming it', () =>
    expectMissing(cli, '@stepwise/store-postgres', 'createRunner', () =>
      createRunner({ store: { kind: 'postgres', url: UNREACHABLE_POSTGRES } }),
    ),
  );
  await check('an MCP server without @stepwise/tools-mcp: E601 naming it', () =>
    expectMissing(cli, '@stepwise/tools-mcp', 'createRunner', () =>
      createRunner({ store: 'memory', plugins: [{ mcp: { command: process.execPath, args: ['server.mjs'] } }] }),
    ),
  );
  await schemaChecks(cli, load);
}

/** The checks that predate the optional-peer ones: other schema libraries, core/testing without vitest. */
async function schemaChecks(cli, load) {
  const { defineTool, ToolRegistry, StepwiseError } = cli.core;
  const { dagEngine } = await load('@stepwise/engine-dag');
  const { makePlan, MemoryStore, createTestTools } = await load('@stepwise/core/testing');
  const greeter = (name, input) =>
    defineTool({ name, description: 'Greets.', input, effect: 'read', execute: ({ who }) => ({ text: `hi ${who}` }) });
  // Bad arguments are refused by run() itself or by its result, whichever the engine does.
  const runTool = async (tool, args) => {
    const engine = dagEngine({ tools: new ToolRegistry([tool]), store: new MemoryStore() });
    try {
      return await engine.run(makePlan([{ id: 'greet', tool: tool.name, args }])).result;
    } catch (error) {
      return error;
    }
  };
  const refused = (outcome) => StepwiseError.isInstance(outcome) && outcome.code === 'E202';

  await check('a zod 3 tool runs, and bad arguments are refused with E202', async () => {
    const z = await load('zod');
    assert(versionOf('zod').startsWith('3.'), `the project has zod ${versionOf('zod')}`);
    const tool = greeter('zod3_greet', z.object({ who: z.string() }));
    const good = await runTool(tool, { who: 'Ada' });
    assert(good.status === 'completed' && good.steps[0].output.text === 'hi Ada', JSON.stringify(good));
    const bad = await runTool(tool, { who: 42 });
    assert(refused(bad), `expected E202, got ${String(bad)}`);
  });
  await check('a zod 3 z.date() argument: E602 from toFunctionDefinitions (JSON cannot carry a Date)', async () => {
    const z = await load('zod');
    const tool = greeter('zod3_when', z.object({ who: z.string(), when: z.date() }));
    let thrown;
    try {
      new ToolRegistry([tool]).toFunctionDefinitions();
    } catch (error) {
      thrown = error;
    }
    assert(StepwiseError.isInstance(thrown) && thrown.code === 'E602', `expected E602, got ${String(thrown)}`);
    assert(String(thrown.message).includes('/when'), `the message names the argument: ${thrown.message}`);
  });
  await check('a valibot tool runs, and bad arguments are refused with E202', async () => {
    const v = await load('valibot');
    const tool = greeter('valibot_greet', v.object({ who: v.string() }));
    const good = await runTool(tool, { who: 'Grace' });
    assert(good.status === 'completed' && good.steps[0].output.text === 'hi Grace', JSON.stringify(good));
    const bad = await runTool(tool, {});
    assert(refused(bad), `expected E202, got ${String(bad)}`);
  });
  await check('@stepwise/core/engine, /store and /testing share one copy of core with @stepwise/core', async () => {
    const engine = await load('@stepwise/core/engine');
    const store = await load('@stepwise/core/store');
    const error = engine.planInvalidError([{ code: 'E001', kind: 'schema', path: '/id', message: 'required' }]);
    assert(error instanceof StepwiseError, 'a StepwiseError of @stepwise/core/engine is not one of @stepwise/core');
    assert(new MemoryStore() instanceof cli.core.MemoryStore, '@stepwise/core/testing has a MemoryStore of its own');
    assert(typeof store.foldRun === 'function' && typeof store.checkBatch === 'function', 'no foldRun in /store');
  });
  await check('@stepwise/core/testing loads and works without vitest', async () => {
    assert(!isInstalled('vitest'), 'vitest is installed in the project; the check would prove nothing');
    const { registry, log } = createTestTools();
    const engine = dagEngine({ tools: registry, store: new MemoryStore() });
    const result = await engine.run(makePlan([{ id: 'a', tool: 'echo', args: { value: 1 } }])).result;
    assert(result.status === 'completed' && log.count('echo') === 1, JSON.stringify(result));
  });
}

async function sequentialChecks(cli) {
  await check('engine "sequential" runs an approved plan', () =>
    runDagPlan(cli, 'sequential', (plan) => ({ authorization: cli.core.approvePlan(plan, { by: 'check' }) })),
  );
}

async function agenticChecks(cli, load) {
  const { scriptedModel, toolCall, complete } = await load('@stepwise/engine-agentic/testing');
  await check('engine "agentic" carries out a goal step with a model', () =>
    inWorkspace(async (workspace) => {
      const model = scriptedModel([toolCall('file_read', { path: 'package.json' }), complete('read it')]);
      const runner = await cli.createRunner({ engine: 'agentic', workspace, store: 'memory', model });
      try {
        const plan = { id: 'goal', steps: [{ id: 'read', description: 'Read package.json' }] };
        const result = await runner.run(plan).result;
        assert(result.status === 'completed' && model.calls === 2, JSON.stringify(result));
      } finally {
        await runner.close();
      }
    }),
  );
  await check('the agentic engine counts tokens heuristically without gpt-tokenizer', async () => {
    assert(!isInstalled('gpt-tokenizer'), 'gpt-tokenizer is installed; the check would prove nothing');
    const { loadTokenEstimator } = await load('@stepwise/engine-agentic');
    const estimator = await loadTokenEstimator();
    assert(estimator.name === 'heuristic', `estimator ${estimator.name}`);
    assert(estimator.count('12345678') === 2, `count ${estimator.count('12345678')}`);
  });
}

async function codeAgentChecks(cli, load) {
  const { scriptedModel, complete } = await load('@stepwise/engine-agentic/testing');
  await check('@stepwise/code-agent solves a one-step plan: the model loop, the validation, the result', () =>
    inWorkspace(async (workspace) => {
      const { solve } = await load('@stepwise/code-agent');
      const model = scriptedModel([complete('nothing to change')]);
      const plan = { id: 'noop', steps: [{ id: 'noop', description: 'Change nothing.' }] };
      const result = await solve({ task: 'Change nothing', workspace, model, validate: ['node', '--version'], plan });
      const [attempt] = result.attempts;
      assert(result.status === 'solved' && model.calls === 1, JSON.stringify(result));
      assert(attempt?.validation?.passed === true && !attempt.rolledBack, JSON.stringify(attempt));
    }),
  );
  await check("the cli's solve() loads @stepwise/code-agent (its option check answers, not E601 naming it)", () =>
    inWorkspace(async (workspace) => {
      const error = await rejection(
        cli.solve({ task: 'nothing', workspace, validate: [], model: unusedModel }),
        'solve with an empty validation',
      );
      assert(cli.core.StepwiseError.isInstance(error), `expected a StepwiseError, got ${error?.stack ?? error}`);
      assert(
        error.code === 'E601' && error.location === 'validate',
        `${error.code} at ${error.location}: ${error.message}`,
      );
      assert(error.details?.package === undefined, `details: ${JSON.stringify(error.details)}`);
    }),
  );
}

async function mcpChecks(cli) {
  await check('an MCP server in the plugins: its tool is registered and runs', async () => {
    // The project is the workspace, as for a server a user keeps beside their code: the OS sandbox
    // (where bubblewrap starts) shows the server only its workspace, and the temp directory not at all.
    const runner = await cli.createRunner({
      workspace: process.cwd(),
      store: 'memory',
      tools: [],
      plugins: [{ mcp: { command: process.execPath, args: ['mcp-server.mjs'] }, prefix: 'packed_' }],
    });
    try {
      const plan = { id: 'mcp', steps: [{ id: 'greet', tool: 'packed_greet', args: { who: 'Ada' } }] };
      const result = await runner.run(plan).result;
      assert(result.status === 'completed', JSON.stringify(result));
      assert(JSON.stringify(result.steps[0].output).includes('hello Ada'), JSON.stringify(result.steps[0].output));
    } finally {
      await runner.close();
    }
  });
}

async function postgresChecks(cli, load) {
  await check('a Postgres store with no server: refused as unreachable (not E601)', async () => {
    const { createPostgresStore } = await load('@stepwise/store-postgres');
    assert(typeof createPostgresStore === 'function', 'createPostgresStore is not a function');
    const error = await rejection(
      cli.createRunner({ store: { kind: 'postgres', url: UNREACHABLE_POSTGRES } }),
      'createRunner with an unreachable server',
    );
    assert(cli.core.StepwiseError.isInstance(error), `expected a StepwiseError, got ${error?.stack ?? error}`);
    assert(error.code !== 'E601', `E601: ${error.message}`);
  });
}

const SCENARIOS = {
  minimal: [minimalChecks],
  '@stepwise/engine-sequential': [sequentialChecks],
  '@stepwise/engine-agentic': [agenticChecks],
  '@stepwise/code-agent': [codeAgentChecks],
  '@stepwise/tools-mcp': [mcpChecks],
  '@stepwise/store-postgres': [postgresChecks],
  full: [sequentialChecks, agenticChecks, codeAgentChecks, mcpChecks, postgresChecks],
};

/** Runs the scenario's checks with `load` (`import()` or `require`); prints them with `label` first. */
async function runChecks(scenario, load, label) {
  let cli;
  await check('@stepwise/cli loads', async () => {
    cli = { ...(await load('@stepwise/cli')), core: await load('@stepwise/core') };
    assert(typeof cli.createRunner === 'function', 'no createRunner export');
  });
  for (const checks of cli ? SCENARIOS[scenario] : []) {
    // A module the checks need failed to load: one line saying so instead of a crash.
    await checks(cli, load).catch((error) => check(`${checks.name} ran`, () => Promise.reject(error)));
  }
  console.log(results.map((line) => line.replace(/^(ok {2}|FAIL) /, `$1 ${label}: `)).join('\n'));
}

module.exports = { runChecks };

// Installs the packages as a user gets them — `npm pack` tarballs, everything else from the npm
// registry — into a fresh ESM project and a fresh CommonJS project, and checks there: the root
// README's Quick start, a zod 3 tool, a valibot tool, `@stepwise/core/testing` without vitest,
// `createRunner` with an engine that is not installed (a typed error naming it), and the agentic
// engine's token estimator without gpt-tokenizer. Prints one line per check; exits 1 if any fails.
//
//   node scripts/check-packed-packages.mjs [--keep]     (build the packages first)
//
// better-sqlite3 is installed without its install script, at the repository's version, and gets
// the repository's compiled addon (same Node, same platform): compiling it again takes minutes.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { closure, packAll } from './measure-install.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'stepwise-packed-'));
const sqliteVersion = JSON.parse(
  readFileSync(path.join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8'),
).version;

/** The root README's Quick start, exactly as a user copies it. */
function readmeQuickStart() {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## Quick start');
  const match = /```ts[^\n]*\n([\s\S]*?)```/.exec(readme.slice(start));
  if (!match) throw new Error('README.md has no TypeScript Quick start');
  // The snippet is TypeScript only through `as const`; Node runs the rest as JavaScript.
  return match[1].replaceAll(' as const', '');
}

// Shared by both projects: `load(name)` is `import()` (ESM) or `require()` (CommonJS).
const CHECKS = `
const results = [];
async function check(name, body) {
  try {
    await body();
    results.push('ok   ' + name);
  } catch (error) {
    results.push('FAIL ' + name + ': ' + (error && error.stack ? error.stack : String(error)));
    process.exitCode = 1;
  }
}
function assert(condition, message) {
  if (!condition) throw new Error(message);
}

async function runChecks(load) {
  const { defineTool, ToolRegistry, StepwiseError } = await load('@stepwise/core');
  const { dagEngine } = await load('@stepwise/engine-dag');
  const { makePlan, MemoryStore, createTestTools } = await load('@stepwise/core/testing');

  const greeter = (name, input) =>
    defineTool({ name, description: 'Greets.', input, effect: 'read', execute: ({ who }) => ({ text: 'hi ' + who }) });
  async function runTool(tool, args) {
    const engine = dagEngine({ tools: new ToolRegistry([tool]), store: new MemoryStore() });
    return engine.run(makePlan([{ id: 'greet', tool: tool.name, args }])).result.then(
      (result) => result,
      (error) => error,
    );
  }

  await check('a zod 3 tool runs, and bad arguments are refused with E202', async () => {
    const z = await load('zod');
    assert(require_version('zod').startsWith('3.'), 'the project has zod ' + require_version('zod'));
    const tool = greeter('zod3_greet', z.object({ who: z.string() }));
    const good = await runTool(tool, { who: 'Ada' });
    assert(good.status === 'completed' && good.steps[0].output.text === 'hi Ada', JSON.stringify(good));
    const bad = await runTool(tool, { who: 42 });
    assert(StepwiseError.isInstance(bad) && bad.code === 'E202', 'expected E202, got ' + String(bad));
  });

  await check('a valibot tool runs, and bad arguments are refused with E202', async () => {
    const v = await load('valibot');
    const tool = greeter('valibot_greet', v.object({ who: v.string() }));
    const good = await runTool(tool, { who: 'Grace' });
    assert(good.status === 'completed' && good.steps[0].output.text === 'hi Grace', JSON.stringify(good));
    const bad = await runTool(tool, {});
    assert(StepwiseError.isInstance(bad) && bad.code === 'E202', 'expected E202, got ' + String(bad));
  });

  await check('@stepwise/core/testing loads and works without vitest', async () => {
    let vitest = 'installed';
    try {
      require_version('vitest');
    } catch {
      vitest = 'absent';
    }
    assert(vitest === 'absent', 'vitest is installed in the project; the check would prove nothing');
    const { registry, log } = createTestTools();
    const engine = dagEngine({ tools: registry, store: new MemoryStore() });
    const result = await engine.run(makePlan([{ id: 'a', tool: 'echo', args: { value: 1 } }])).result;
    assert(result.status === 'completed' && log.count('echo') === 1, JSON.stringify(result));
  });

  await check('createRunner with an engine that is not installed: E601 naming the package', async () => {
    const { createRunner } = await load('@stepwise/cli');
    const error = await createRunner({ engine: 'sequential', store: 'memory' }).then(
      (runner) => runner.close().then(() => undefined),
      (thrown) => thrown,
    );
    assert(StepwiseError.isInstance(error) && error.code === 'E601', 'expected E601, got ' + String(error));
    assert(error.details.package === '@stepwise/engine-sequential', 'details: ' + JSON.stringify(error.details));
    assert(error.message.includes('npm install @stepwise/engine-sequential'), error.message);
    const runner = await createRunner({ engine: 'dag', store: 'memory' });
    await runner.close();
  });

  await check('the agentic engine counts tokens heuristically without gpt-tokenizer', async () => {
    const { loadTokenEstimator } = await load('@stepwise/engine-agentic');
    const estimator = await loadTokenEstimator();
    assert(estimator.name === 'heuristic', 'estimator ' + estimator.name);
    assert(estimator.count('12345678') === 2, 'count ' + estimator.count('12345678'));
  });
}
`;

function project(kind, tarballs) {
  const folder = path.join(scratch, kind);
  mkdirSync(folder);
  const type = kind === 'esm' ? 'module' : 'commonjs';
  writeFileSync(path.join(folder, 'package.json'), JSON.stringify({ name: `fresh-${kind}`, private: true, type }));
  execFileSync(
    'npm',
    [
      'install',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      ...tarballs,
      'zod@3',
      'valibot@1',
      `better-sqlite3@${sqliteVersion}`,
    ],
    { cwd: folder, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const addon = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
  mkdirSync(path.dirname(path.join(folder, addon)), { recursive: true });
  copyFileSync(path.join(ROOT, addon), path.join(folder, addon));
  // A package.json with a test script, for the Quick start's `npm test` step.
  const manifest = JSON.parse(readFileSync(path.join(folder, 'package.json'), 'utf8'));
  writeFileSync(
    path.join(folder, 'package.json'),
    JSON.stringify({ ...manifest, scripts: { test: 'node --version' } }),
  );
  return folder;
}

function run(folder, file, source) {
  writeFileSync(path.join(folder, file), source);
  const outcome = spawnSync(process.execPath, [file], { cwd: folder, encoding: 'utf8', timeout: 120_000 });
  return outcome;
}

let failed = false;
try {
  const tarballs = packAll(path.join(scratch, 'tarballs'));
  // What the checks need; deliberately not engine-sequential, tools-mcp, gpt-tokenizer or vitest.
  const install = [
    ...new Set([...closure('@stepwise/cli', tarballs), ...closure('@stepwise/engine-agentic', tarballs)]),
  ];
  const versionOf = `
function require_version(name) {
  return JSON.parse(require('node:fs').readFileSync(require('node:path').join('node_modules', name, 'package.json'), 'utf8')).version;
}`;

  const esm = project('esm', install);
  const quick = run(esm, 'quick-start.mjs', readmeQuickStart());
  const quickOk = quick.status === 0 && /\bcompleted\b/.test(quick.stdout);
  console.log(`${quickOk ? 'ok  ' : 'FAIL'} esm: the README Quick start runs and completes`);
  if (!quickOk) console.log(quick.stdout, quick.stderr);
  const esmChecks = run(
    esm,
    'checks.mjs',
    `import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n${versionOf}\n${CHECKS}\nawait runChecks((name) => import(name));\nconsole.log(results.map((line) => line.replace(/^(ok  |FAIL)/, '$1 esm:')).join('\\n'));\n`,
  );
  process.stdout.write(esmChecks.stdout + esmChecks.stderr);

  const cjs = project('cjs', install);
  const quickCjs = run(
    cjs,
    'quick-start.cjs',
    readmeQuickStart()
      .replace(/^import \{ (.+) \} from '(.+)';$/gm, (_, names, from) => `const { ${names} } = require('${from}');`)
      .replace(/^/, '(async () => {\n')
      .concat('\n})().catch((error) => { console.error(error); process.exit(1); });\n'),
  );
  const quickCjsOk = quickCjs.status === 0 && /\bcompleted\b/.test(quickCjs.stdout);
  console.log(`${quickCjsOk ? 'ok  ' : 'FAIL'} cjs: the README Quick start (require) runs and completes`);
  if (!quickCjsOk) console.log(quickCjs.stdout, quickCjs.stderr);
  const cjsChecks = run(
    cjs,
    'checks.cjs',
    `${versionOf}\n${CHECKS}\nrunChecks(async (name) => require(name)).then(() => console.log(results.map((line) => line.replace(/^(ok  |FAIL)/, '$1 cjs:')).join('\\n')));\n`,
  );
  process.stdout.write(cjsChecks.stdout + cjsChecks.stderr);
  failed = !quickOk || !quickCjsOk || esmChecks.status !== 0 || cjsChecks.status !== 0;
} finally {
  if (keep) console.log(`kept ${scratch}`);
  else rmSync(scratch, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

// Installs the packages as a user gets them — `npm pack` tarballs, everything else from the npm
// registry, npm's default peer handling (no --legacy-peer-deps, no --force) — into fresh projects
// and checks them there (one line per check; exits 1 if any fails):
//
//   - @stepwise/cli with its dependencies only: the install succeeds and brings no optional peer;
//     the cli loads with import() and require(); `npx stepwise --help` works; createRunner with the
//     dag engine runs a plan; each piece that needs a missing optional peer (the sequential and
//     agentic engines, a model endpoint, solve, a Postgres store, an MCP server, `stepwise solve`,
//     `stepwise worker`) fails with E601 naming the package; `tsc --strict` compiles an import of
//     the cli as an ES module and as CommonJS; the root README's Quick start runs (ESM and CJS); a
//     zod 3 and a valibot tool run; @stepwise/core/testing works without vitest.
//   - then each optional peer of the cli added on its own (with the Stepwise packages it depends
//     on): the install succeeds and the piece that needed it works (a sequential run, an agentic goal
//     step, the code agent solving a plan, `stepwise solve` past loading and `solve`'s types, an MCP
//     server's tool, a Postgres store refused as unreachable rather than missing).
//   - every optional peer at once. Prints the size of the smallest and the fullest install.
//
//   node scripts/check-packed-packages.mjs [--keep]     (build the packages first)
//
// better-sqlite3 is installed without its install script, at the repository's version, and gets
// the repository's compiled addon (same Node, same platform): compiling it again takes minutes.
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { closure, describeSize, packAll, sizeOf } from './measure-install.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CHECKS = path.join(ROOT, 'scripts', 'packed-install');
const OPTIONAL_PEERS = [
  '@stepwise/engine-sequential',
  '@stepwise/engine-agentic',
  '@stepwise/code-agent',
  '@stepwise/tools-mcp',
  '@stepwise/store-postgres',
];
// What the checks need beside the packages: a zod 3 tool (with the converter core uses for it), a
// valibot tool, and the TypeScript a user has.
const EXTRAS = ['zod@3', 'zod-to-json-schema@3', 'valibot@1', 'typescript@5.9', '@types/node@20'];
const UNREACHABLE_POSTGRES = 'postgres://stepwise:secret@127.0.0.1:1/stepwise';
const keep = process.argv.includes('--keep');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'stepwise-packed-'));
const sqliteVersion = JSON.parse(
  readFileSync(path.join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8'),
).version;
let failures = 0;

function report(ok, name, detail) {
  if (!ok) failures++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${!ok && detail ? `: ${detail}` : ''}`);
}

// `stepwise trust` writes the user's trust store: the checks keep theirs in the scratch folder.
const env = { ...process.env, XDG_CONFIG_HOME: path.join(scratch, 'config') };

function spawn(command, args, folder, timeout = 120_000) {
  const outcome = spawnSync(command, args, { cwd: folder, encoding: 'utf8', timeout, env });
  return { status: outcome.status, stdout: outcome.stdout ?? '', stderr: outcome.stderr ?? '', error: outcome.error };
}

/** npm's last error lines: enough to see which package and why. */
function npmError(outcome) {
  const lines = `${outcome.stderr}${outcome.error ? `\n${outcome.error.message}` : ''}`.split('\n');
  return (
    lines
      .filter((line) => /npm error|ERR!|ERESOLVE|E404|Error/.test(line))
      .slice(0, 12)
      .join('\n  ') || lines.slice(-12).join('\n  ')
  );
}

/** `npm install` as a user runs it (scripts skipped: see above); reports and returns whether it succeeded. */
function install(folder, specs, name) {
  const started = performance.now();
  const outcome = spawn('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', ...specs], folder, 600_000);
  const ok = outcome.status === 0;
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  report(ok, `${name}: npm install succeeds with no flags (${seconds} s)`, ok ? '' : `\n  ${npmError(outcome)}`);
  return ok;
}

/** A fresh project at scratch/<name> with `specs` installed (`label` says what they are), sized before anything else is added. */
function newProject(name, specs, label) {
  const folder = path.join(scratch, name);
  mkdirSync(folder);
  // A test script for the Quick start's `npm test` step.
  const manifest = { name: `fresh-${name}`, private: true, type: 'module', scripts: { test: 'node --version' } };
  writeFileSync(path.join(folder, 'package.json'), JSON.stringify(manifest));
  if (!install(folder, [...specs, `better-sqlite3@${sqliteVersion}`], `${name} (${label})`)) return undefined;
  console.log(`size ${label}: ${describeSize(sizeOf(path.join(folder, 'node_modules')))}`);
  const addon = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
  mkdirSync(path.dirname(path.join(folder, addon)), { recursive: true });
  copyFileSync(path.join(ROOT, addon), path.join(folder, addon));
  for (const file of ['installed-checks.cjs', 'mcp-server.mjs'])
    copyFileSync(path.join(CHECKS, file), path.join(folder, file));
  return folder;
}

/** Runs a scenario of installed-checks.cjs through import() and through require(). */
function runScenario(folder, scenario) {
  const entries = {
    'checks.mjs': `import checks from './installed-checks.cjs';\nawait checks.runChecks(${JSON.stringify(scenario)}, (name) => import(name), 'esm');\n`,
    'checks.cjs': `require('./installed-checks.cjs').runChecks(${JSON.stringify(scenario)}, async (name) => require(name), 'cjs');\n`,
  };
  for (const [file, source] of Object.entries(entries)) {
    writeFileSync(path.join(folder, file), source);
    const outcome = spawn(process.execPath, [file], folder);
    const lines = outcome.stdout.split('\n').filter((line) => /^(ok {2}|FAIL) /.test(line));
    for (const line of lines) {
      if (line.startsWith('FAIL')) failures++;
      console.log(`${line.startsWith('FAIL') ? 'FAIL' : 'ok  '} ${scenario}/${line.slice(5)}`);
    }
    if (outcome.status !== 0 && !lines.some((line) => line.startsWith('FAIL'))) {
      report(false, `${scenario}/${file} ran`, `exit ${outcome.status}\n${outcome.stdout}${outcome.stderr}`);
    }
  }
}

/** The root README's Quick start, exactly as a user copies it, as an ES module and as CommonJS. */
function quickStart(folder) {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const match = /```ts[^\n]*\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Quick start')));
  if (!match) return report(false, 'README.md has a TypeScript Quick start');
  // The snippet is TypeScript only through `as const`; Node runs the rest as JavaScript.
  const esm = match[1].replaceAll(' as const', '');
  const cjs = esm
    .replace(/^import \{ (.+) \} from '(.+)';$/gm, (_, names, from) => `const { ${names} } = require('${from}');`)
    .replace(/^/, '(async () => {\n')
    .concat('\n})().catch((error) => { console.error(error); process.exit(1); });\n');
  for (const [file, source] of [
    ['quick-start.mjs', esm],
    ['quick-start.cjs', cjs],
  ]) {
    writeFileSync(path.join(folder, file), source);
    const outcome = spawn(process.execPath, [file], folder);
    const ok = outcome.status === 0 && /\bcompleted\b/.test(outcome.stdout);
    report(ok, `minimal/${file}: the README Quick start runs and completes`, `${outcome.stdout}${outcome.stderr}`);
  }
}

/** `npx stepwise …` in `folder`: the exit status and what it printed. */
function stepwise(folder, ...args) {
  return spawn('npx', ['--no', '--', 'stepwise', ...args], folder);
}

function binChecks(folder, scenario) {
  const postgresConfig = path.join(folder, 'postgres.config.json');
  writeFileSync(postgresConfig, JSON.stringify({ store: { kind: 'postgres', url: UNREACHABLE_POSTGRES } }));
  const solve = () => stepwise(folder, 'solve', 'nothing', '--validate', 'node --version');
  // A configuration loads only once trusted, as in CI: trust it right after writing it.
  const trusted = stepwise(folder, 'trust', postgresConfig);
  if (trusted.status !== 0)
    report(false, `${scenario}/npx stepwise trust postgres.config.json`, `${trusted.stdout}${trusted.stderr}`);
  const worker = () => stepwise(folder, 'worker', '--config', postgresConfig);
  // The exit status and the lines that say what went wrong (stack frames left out).
  const printed = (outcome) =>
    [`exit ${outcome.status}`, ...`${outcome.stdout}${outcome.stderr}`.split('\n')]
      .filter((line) => line.trim() !== '' && !/^\s+at /.test(line))
      .slice(0, 12)
      .join('\n  ');
  const names = (outcome, name) => outcome.status !== 0 && outcome.stderr.includes(`npm install ${name}`);
  if (scenario === 'minimal') {
    const help = stepwise(folder, '--help');
    report(help.status === 0 && help.stdout.includes('Usage: stepwise'), 'minimal/npx stepwise --help', printed(help));
    writeFileSync(
      path.join(folder, 'plan.json'),
      JSON.stringify({ id: 'read', steps: [{ id: 'read', tool: 'file_read', args: { path: 'package.json' } }] }),
    );
    const validate = stepwise(folder, 'validate', 'plan.json');
    report(validate.status === 0, 'minimal/npx stepwise validate plan.json', printed(validate));
    const solving = solve();
    const solveOk = names(solving, '@stepwise/code-agent');
    report(solveOk, 'minimal/npx stepwise solve: E601 naming @stepwise/code-agent', printed(solving));
    const working = worker();
    const workerOk = names(working, '@stepwise/store-postgres');
    report(workerOk, 'minimal/npx stepwise worker (Postgres): E601 naming @stepwise/store-postgres', printed(working));
  } else if (scenario === '@stepwise/engine-agentic') {
    // The engine alone is not the code agent.
    const solving = solve();
    const solveOk = names(solving, '@stepwise/code-agent');
    report(solveOk, `${scenario}/npx stepwise solve: E601 naming @stepwise/code-agent`, printed(solving));
  } else if (scenario === '@stepwise/code-agent') {
    // Past the package: the next thing it needs is a model, which this project does not configure.
    const solving = solve();
    const solveOk = solving.status !== 0 && solving.stderr.includes('solve needs a model') && !names(solving, scenario);
    report(solveOk, `${scenario}/npx stepwise solve gets past loading (asks for a model)`, printed(solving));
  } else if (scenario === '@stepwise/store-postgres') {
    const working = worker();
    const workerOk = working.status !== 0 && !names(working, scenario) && /E50\d/.test(working.stderr);
    report(workerOk, `${scenario}/npx stepwise worker: the server is unreachable (not E601)`, printed(working));
  }
}

/**
 * `tsc --strict` over `files` (written into the project), with the project's own TypeScript.
 * `libraries`: also check the packages' declaration files, where a missing package is TS2307.
 */
function typeCheck(folder, scenario, files, libraries = true) {
  for (const [file, source] of Object.entries(files)) writeFileSync(path.join(folder, file), source);
  const compilerOptions = { strict: true, module: 'nodenext', target: 'es2022', noEmit: true, types: ['node'] };
  if (!libraries) compilerOptions.skipLibCheck = true;
  writeFileSync(path.join(folder, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: Object.keys(files) }));
  const outcome = spawn('npx', ['--no', '--', 'tsc', '-p', 'tsconfig.json'], folder);
  const errors = `${outcome.stdout}${outcome.stderr}`.trim();
  report(outcome.status === 0, `${scenario}/tsc --strict: ${Object.keys(files).join(', ')}`, `\n${errors}`);
}

const USES_CLI = `
const options: RunnerOptions = { engine: 'dag', store: 'memory' };
export const runner: Promise<Runner> = createRunner(options);
export const model: SolveOptions['model'] = { name: 'none', generate: async () => ({}) };
`;
const TYPESCRIPT = {
  'uses-cli.mts': `import { createRunner, type Runner, type RunnerOptions, type SolveOptions } from '@stepwise/cli';\n${USES_CLI}`,
  'uses-cli.cts': `import { createRunner, type Runner, type RunnerOptions, type SolveOptions } from '@stepwise/cli';\n${USES_CLI}`,
};
// Every ChatModel of the agentic engine is a model `solve` accepts: the code agent's, with its full
// types, and the cli's deprecated one that loads it, whose own types give `onProgress` its event
// (no implicit any under --strict) and the result its attempts and steps.
const SOLVE_WITH_CHAT_MODEL = `import { solve as solveFromCli } from '@stepwise/cli';
import { type SolveEvent, type SolveResult, solve } from '@stepwise/code-agent';
import { type ChatModel, openAICompatible } from '@stepwise/engine-agentic';

const model: ChatModel = openAICompatible({ baseURL: 'http://127.0.0.1:1/v1', model: 'none' });
const progress = (event: SolveEvent) => (event.type === 'attempt-end' ? event.attempt.stepId : event.type);
export const solving = (): Promise<SolveResult> =>
  solve({ task: 'fix it', workspace: '.', validate: ['npm', 'test'], model, limits: { maxTurns: 3 }, onProgress: progress });
export const solvingFromCli = async (): Promise<number> => {
  const result = await solveFromCli({
    task: 'fix it', workspace: '.', validate: ['npm', 'test'], model, limits: { maxTurns: 3 },
    onProgress(event) {
      if (event.type === 'attempt-end') console.log(event.attempt.stepId, event.attempt.validations.length);
    },
  });
  return result.attempts.length + result.steps.length;
};
`;

function checkMinimal(minimal) {
  if (!install(minimal, EXTRAS, 'minimal + zod 3, valibot, typescript')) return;
  runScenario(minimal, 'minimal');
  quickStart(minimal);
  binChecks(minimal, 'minimal');
  typeCheck(minimal, 'minimal', TYPESCRIPT);
}

/** The minimal project and one optional peer added to it. */
function checkPeer(minimal, peer, tarballs) {
  const folder = path.join(scratch, peer.replace('@stepwise/', ''));
  cpSync(minimal, folder, { recursive: true, verbatimSymlinks: true });
  if (!install(folder, closure(peer, tarballs), `minimal + ${peer}`)) return;
  runScenario(folder, peer);
  binChecks(folder, peer);
  if (peer === '@stepwise/code-agent') {
    typeCheck(folder, peer, { 'solve-with-chat-model.mts': SOLVE_WITH_CHAT_MODEL }, false);
  }
}

try {
  const tarballs = packAll(path.join(scratch, 'tarballs'));
  const cli = closure('@stepwise/cli', tarballs);
  const minimal = newProject('minimal', cli, '@stepwise/cli alone');
  const everything = [...new Set([cli, ...OPTIONAL_PEERS.map((peer) => closure(peer, tarballs))].flat())];
  const full = newProject('full', everything, '@stepwise/cli with every optional peer');
  if (minimal) {
    checkMinimal(minimal);
    for (const peer of OPTIONAL_PEERS) checkPeer(minimal, peer, tarballs);
  }
  if (full) runScenario(full, 'full');
} catch (error) {
  report(false, 'the packed check ran', error?.stack ?? String(error));
} finally {
  if (keep) console.log(`kept ${scratch}`);
  else rmSync(scratch, { recursive: true, force: true });
}
console.log(failures === 0 ? 'packed packages: every check passed' : `packed packages: ${failures} checks failed`);
process.exit(failures === 0 ? 0 : 1);

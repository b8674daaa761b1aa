#!/usr/bin/env node
// The Stepwise demo: a small npm project with a bug, a plan that reads it, searches it, fixes
// it, runs its tests and writes a summary — run by the dag engine through the `stepwise` CLI,
// journaled in SQLite, then shown as an audit trail and as an HTML report.
// `npm run demo` builds the packages first; this script only needs packages/cli/dist.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = path.resolve(here, '..', '..', 'packages', 'cli', 'dist', 'bin.js');
const tty = process.stdout.isTTY === true;
const bold = (text) => (tty ? `\u001b[1m${text}\u001b[22m` : text);
const gray = (text) => (tty ? `\u001b[90m${text}\u001b[39m` : text);

if (!existsSync(bin)) {
  console.error(`The CLI is not built (${bin} is missing). Run "npm run demo" from the repository root.`);
  process.exit(1);
}

/** The project the plan works on: a temperature converter whose Fahrenheit formula is upside down. */
const project = {
  'package.json': `${JSON.stringify(
    {
      name: 'temperature-utils',
      version: '1.0.0',
      description: 'Convert temperatures between Celsius and Fahrenheit.',
      type: 'module',
      main: 'src/convert.js',
      scripts: { test: 'node --test' },
      license: 'MIT',
    },
    null,
    2,
  )}\n`,
  'README.md':
    '# temperature-utils\n\nConvert temperatures between Celsius and Fahrenheit.\n\n```js\nimport { toFahrenheit, toCelsius } from "temperature-utils";\n```\n',
  'src/convert.js': [
    '/** Degrees Celsius to degrees Fahrenheit. */',
    'export function toFahrenheit(celsius) {',
    '  return (celsius * 9) / 5 + 32;',
    '}',
    '',
    '/** Degrees Fahrenheit to degrees Celsius. */',
    'export function toCelsius(fahrenheit) {',
    '  return ((fahrenheit - 32) * 9) / 5;',
    '}',
    '',
    '/** Formats a temperature for people: one decimal and the unit. */',
    'export function format(value, unit) {',
    "  return value.toFixed(1) + ' °' + unit;",
    '}',
    '',
  ].join('\n'),
  'test/convert.test.js': [
    "import assert from 'node:assert/strict';",
    "import { test } from 'node:test';",
    "import { format, toCelsius, toFahrenheit } from '../src/convert.js';",
    '',
    "test('water boils at 212 °F', () => assert.equal(toFahrenheit(100), 212));",
    "test('water freezes at 0 °C', () => assert.equal(toCelsius(32), 0));",
    "test('body temperature round-trips', () => assert.equal(toCelsius(toFahrenheit(37)), 37));",
    "test('formats with one decimal', () => assert.equal(format(21.456, 'C'), '21.5 °C'));",
    '',
  ].join('\n'),
};

const plan = {
  id: 'fix-temperature-conversion',
  version: 1,
  goal: 'Fix the Celsius conversion in temperature-utils and prove it with the tests',
  intent: 'MUTATE',
  steps: [
    { id: 'read-source', tool: 'file_read', args: { path: 'src/convert.js' }, description: 'Read the converter' },
    {
      id: 'read-tests',
      tool: 'file_read',
      args: { path: 'test/convert.test.js' },
      description: 'Read what the tests expect',
    },
    {
      id: 'find-formula',
      tool: 'file_search',
      args: { query: '* 9) / 5', path: 'src', include: ['*.js'] },
      description: 'Find every use of the Fahrenheit factor',
    },
    { id: 'list-project', tool: 'dir_list', args: { path: '.', depth: 2 }, description: 'See the project layout' },
    {
      id: 'fix-formula',
      tool: 'file_edit',
      dependsOn: ['read-source', 'find-formula'],
      description: 'Invert the factor in toCelsius',
      args: {
        path: 'src/convert.js',
        edits: [{ search: 'return ((fahrenheit - 32) * 9) / 5;', replace: 'return ((fahrenheit - 32) * 5) / 9;' }],
      },
    },
    {
      id: 'run-tests',
      tool: 'run_command',
      dependsOn: ['fix-formula', 'read-tests'],
      description: 'Run the test suite',
      args: { command: ['node', '--test'] },
      retry: { maxAttempts: 2, initialDelayMs: 200 },
    },
    {
      id: 'save-test-log',
      tool: 'file_write',
      dependsOn: ['run-tests'],
      description: 'Keep the test output next to the summary',
      args: { path: 'reports/test-output.txt', contents: { $ref: 'run-tests', pointer: '/stdout' } },
    },
    {
      id: 'write-summary',
      tool: 'file_write',
      dependsOn: ['run-tests', 'list-project'],
      description: 'Write what changed and why',
      args: {
        path: 'reports/SUMMARY.md',
        contents: [
          '# Fix: toCelsius used the Fahrenheit factor',
          '',
          '`toCelsius` multiplied by 9/5 instead of 5/9, so 32 °F came out as 0 °C only by accident',
          'and every other value was wrong. The formula is now `((fahrenheit - 32) * 5) / 9`.',
          '',
          'Verified with `node --test` (output in `reports/test-output.txt`).',
          '',
        ].join('\n'),
      },
    },
  ],
};

/** Runs the CLI; `capture` collects stdout instead of showing it. */
function stepwise(args, { cwd, capture = false, onLine } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd,
      stdio: ['inherit', capture || onLine ? 'pipe' : 'inherit', 'inherit'],
      env: process.env,
    });
    let stdout = '';
    let pending = '';
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
      if (!onLine) return;
      pending += chunk;
      let newline = pending.indexOf('\n');
      while (newline !== -1) {
        onLine(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
        newline = pending.indexOf('\n');
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

/** Without a terminal the CLI prints JSONL; show it as one line per finished step. */
function printEvent(line) {
  const event = JSON.parse(line);
  if (event.type === 'run-start') console.log(gray(`run ${event.runId} started (${event.engine} engine)`));
  if (event.type === 'step-retry') console.log(`  ↻ ${event.stepId} retrying in ${event.delayMs} ms`);
  if (event.type === 'step-end') {
    const { result } = event;
    const icon = { succeeded: '✓', failed: '✗', skipped: '↷', denied: '⊘', cancelled: '■' }[result.status] ?? '?';
    const error = result.error ? ` ${result.error.code} ${result.error.message.split('\n')[0]}` : '';
    console.log(
      `  ${icon} ${result.stepId.padEnd(14)} ${String(result.tool).padEnd(12)} ${Math.round(result.durationMs)} ms${error}`,
    );
  }
  if (event.type === 'run-end') console.log(`${event.status} in ${Math.round(event.durationMs)} ms`);
}

const started = Date.now();
const workspace = await mkdtemp(path.join(os.tmpdir(), 'stepwise-demo-'));
for (const [name, contents] of Object.entries(project)) {
  await mkdir(path.dirname(path.join(workspace, name)), { recursive: true });
  await writeFile(path.join(workspace, name), contents);
}
await writeFile(
  path.join(workspace, 'stepwise.config.json'),
  `${JSON.stringify(
    {
      engine: 'dag',
      concurrency: 4,
      // The plan may run `node` (its tests) and nothing else; exec tools are approved for it.
      commands: { allow: ['node'] },
      approvals: { exec: 'auto', nonInteractive: 'deny' },
    },
    null,
    2,
  )}\n`,
);
const planFile = path.join(workspace, 'plan.json');
await writeFile(planFile, `${JSON.stringify(plan, null, 2)}\n`);

console.log(bold('Stepwise demo'));
console.log(`workspace  ${workspace}`);
console.log(`plan       ${plan.goal} (${plan.steps.length} steps)\n`);

// The configuration was just written here: trust it (every command refuses an untrusted one).
const trusted = await stepwise(['trust'], { cwd: workspace, capture: true });
if (trusted.code !== 0) process.exit(trusted.code ?? 1);

const validated = await stepwise(['validate', 'plan.json'], { cwd: workspace });
if (validated.code !== 0) process.exit(validated.code ?? 1);
console.log('');

// In a terminal the CLI draws its live view; otherwise it streams JSONL, summarised here.
const run = tty
  ? await stepwise(['run', 'plan.json'], { cwd: workspace })
  : await stepwise(['run', 'plan.json', '--json'], { cwd: workspace, onLine: printEvent });

const latest = await stepwise(['runs', '--json', '--limit', '1'], { cwd: workspace, capture: true });
const runId = JSON.parse(latest.stdout)[0]?.runId;
if (!runId) {
  console.error('the run was not journaled');
  process.exit(1);
}

console.log(`\n${bold('The audit trail')} ${gray(`(stepwise show ${runId})`)}\n`);
await stepwise(['show', runId], { cwd: workspace });

const reportFile = path.join(workspace, 'report.html');
console.log('');
await stepwise(['report', runId, '--out', reportFile], { cwd: workspace });

console.log(`
${bold('Done')} in ${((Date.now() - started) / 1000).toFixed(1)} s (run exit code ${run.code}).
  journal   ${path.join(workspace, '.stepwise', 'stepwise.db')}
  report    ${reportFile}
            open it in a browser: file://${reportFile}
  try       cd ${workspace} && node ${bin} runs`);
process.exit(run.code ?? 1);

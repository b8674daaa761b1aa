// Every TypeScript/JavaScript snippet of the user documentation is type-checked against the built
// packages (as a user's project would import them), and the ones marked `run` are executed. JSON
// snippets that are plans are validated against the tools of @stepwise/tools-node. A renamed
// option, a wrong argument name or an import that does not exist fails here.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ToolRegistry, validatePlan } from '@stepwise/core';
import { nodeTools } from '@stepwise/tools-node';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentationFiles, extractSnippets, type Snippet, snippetName } from './extract-snippets.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
// Inside the repository, so `@stepwise/*` resolves through the workspace links to each package's
// built `exports`, exactly as from an installed package.
const WORK = path.join(HERE, 'test-artifacts', 'snippets');
const SOURCES = path.join(WORK, 'src');
const OUTPUT = path.join(WORK, 'out');

const snippets: Snippet[] = documentationFiles(ROOT).flatMap((file) =>
  extractSnippets(file, readFileSync(path.join(ROOT, file), 'utf8')),
);
const code = snippets.filter((snippet) => snippet.language !== 'json');
const json = snippets.filter((snippet) => snippet.language === 'json');
const label = (snippet: Snippet) => `${snippet.file}:${snippet.line}${snippet.run ? ' (run)' : ''}`;
const sourcePath = (snippet: Snippet) =>
  path.join(SOURCES, `${snippetName(snippet)}.${snippet.language === 'ts' ? 'ts' : 'js'}`);
const preludeLines = (snippet: Snippet) => (snippet.prelude ? snippet.prelude.split('\n').length : 0);

const diagnostics = new Map<string, string[]>();

beforeAll(() => {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(SOURCES, { recursive: true });
  writeFileSync(path.join(WORK, 'package.json'), JSON.stringify({ type: 'module' }));
  for (const snippet of code) {
    // `export {}` makes every snippet a module: its own scope, top-level await allowed.
    const text = [snippet.prelude, snippet.code, 'export {};', ''].filter((part, index) => index > 0 || part);
    writeFileSync(sourcePath(snippet), text.join('\n'));
  }
  // A module augmentation (`@stepwise/code-agent` adds its events to core's `RunEvent`; a guide's
  // `declare module '@stepwise/core'` adds its own) applies to every file of the program it is in.
  // So the snippets importing code-agent are checked in a program of their own, a document that
  // declares an augmentation in another, and all other snippets without any.
  const declaring = new Set(
    code.filter((snippet) => /declare module/.test(snippet.code)).map((snippet) => snippet.file),
  );
  const programOf = (snippet: Snippet) =>
    /@stepwise\/code-agent/.test(`${snippet.prelude ?? ''}\n${snippet.code}`)
      ? '@stepwise/code-agent'
      : declaring.has(snippet.file)
        ? snippet.file
        : '';
  const groups = new Map<string, Snippet[]>();
  for (const snippet of code) {
    const key = programOf(snippet);
    const group = groups.get(key);
    if (group) group.push(snippet);
    else groups.set(key, [snippet]);
  }
  for (const group of groups.values()) checkAndEmit(group);
}, 240_000);

/** Type-checks `group` in one program, records its diagnostics by snippet, and emits its JavaScript. */
function checkAndEmit(group: Snippet[]): void {
  const program = ts.createProgram(group.map(sourcePath), {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
    typeRoots: [path.join(ROOT, 'node_modules', '@types')],
    skipLibCheck: true,
    allowJs: true,
    checkJs: true,
    rootDir: SOURCES,
    outDir: OUTPUT,
  });
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const file = diagnostic.file?.fileName ?? '(program)';
    const snippet = group.find((candidate) => path.resolve(sourcePath(candidate)) === path.resolve(file));
    let where = file;
    if (snippet && diagnostic.file && diagnostic.start !== undefined) {
      const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      const codeLine = line - preludeLines(snippet);
      where =
        codeLine < 0
          ? `${snippet.file}:${snippet.line} (prelude line ${line + 1})`
          : `${snippet.file}:${snippet.line + codeLine}:${character + 1}`;
    }
    const message = `${where} TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
    const key = snippet ? sourcePath(snippet) : '(program)';
    diagnostics.set(key, [...(diagnostics.get(key) ?? []), message]);
  }
  program.emit();
}

afterAll(() => rmSync(WORK, { recursive: true, force: true }));

describe('documentation snippets', () => {
  it('finds the snippets of every README and guide', () => {
    const files = new Set(code.map((snippet) => snippet.file));
    for (const file of ['README.md', 'packages/core/README.md', 'packages/cli/README.md', 'docs/writing-a-plugin.md'])
      expect(files).toContain(file);
    expect(code.filter((snippet) => snippet.run).length).toBeGreaterThan(3);
  });

  it('type-checks as a whole program', () => {
    expect(diagnostics.get('(program)') ?? []).toEqual([]);
  });

  it.each(code.map((snippet) => [label(snippet), snippet] as const))('%s type-checks', (_, snippet) => {
    expect(diagnostics.get(sourcePath(snippet)) ?? []).toEqual([]);
  });

  const runnable = code.filter((snippet) => snippet.run);
  it.each(runnable.map((snippet) => [label(snippet), snippet] as const))(
    '%s runs',
    (_, snippet) => {
      // A fresh project directory as the working directory: a package.json whose test passes.
      const project = mkdtempSync(path.join(os.tmpdir(), 'stepwise-snippet-'));
      try {
        writeFileSync(
          path.join(project, 'package.json'),
          JSON.stringify({ name: 'snippet-project', version: '1.0.0', scripts: { test: 'node --version' } }, null, 2),
        );
        const emitted = path.join(OUTPUT, `${snippetName(snippet)}.js`);
        const outcome = spawnSync(process.execPath, [emitted], {
          cwd: project,
          encoding: 'utf8',
          timeout: 90_000,
          env: { ...process.env, NO_COLOR: '1' },
        });
        const report = `exit ${outcome.status} ${outcome.signal ?? ''}\n${outcome.stdout}\n${outcome.stderr}`;
        expect(outcome.status, report).toBe(0);
      } finally {
        rmSync(project, { recursive: true, force: true });
      }
    },
    120_000,
  );
});

describe('JSON in the documentation', () => {
  it.each(json.map((snippet) => [label(snippet), snippet] as const))('%s parses (comments allowed)', (_, snippet) => {
    expect(ts.parseConfigFileTextToJson(snippet.file, snippet.code).error?.messageText).toBeUndefined();
  });

  const plans = json
    .map((snippet) => ({ snippet, value: ts.parseConfigFileTextToJson(snippet.file, snippet.code) }))
    .filter(({ value }) => Array.isArray((value.config as { steps?: unknown } | undefined)?.steps));

  it.each(plans.map(({ snippet, value }) => [label(snippet), value] as const))(
    '%s is a valid plan for the tools of @stepwise/tools-node',
    async (_, value) => {
      expect(value.error).toBeUndefined();
      const tools = new ToolRegistry();
      await tools.use(nodeTools({ workspace: os.tmpdir() }));
      const validation = validatePlan(value.config, { tools });
      expect(validation.problems).toEqual([]);
    },
  );
});

describe('links in the documentation', () => {
  const REPOSITORY = 'https://github.com/stepwise-dev/stepwise';
  const files = documentationFiles(ROOT);
  const links = files.flatMap((file) =>
    [...readFileSync(path.join(ROOT, file), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)].map((match) => ({
      file,
      target: match[1] ?? '',
    })),
  );

  it('found links to check', () => {
    expect(links.length).toBeGreaterThan(10);
  });

  it.each(links.map((link) => [`${link.file} → ${link.target}`, link] as const))('%s resolves', (_, link) => {
    const target = link.target.split('#')[0] ?? '';
    if (target === '' || (/^[a-z]+:/.test(target) && !target.startsWith(REPOSITORY))) return;
    if (target.startsWith(REPOSITORY)) {
      // A file or folder of this repository on its default branch: it must exist.
      const inside = /^\/(?:blob|tree)\/main\/(.*)$/.exec(target.slice(REPOSITORY.length));
      if (target === REPOSITORY) return;
      expect(inside, `${target} is not a path on the main branch`).not.toBeNull();
      expect(existsSync(path.join(ROOT, inside?.[1] ?? '')), target).toBe(true);
      return;
    }
    // npm shows a package's README without the rest of the repository: links must be absolute.
    expect(link.file.startsWith('packages/'), `relative link in a published README: ${link.target}`).toBe(false);
    expect(existsSync(path.resolve(ROOT, path.dirname(link.file), target)), link.target).toBe(true);
  });
});

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';

export const PACKAGE_DIRECTORY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BIN = path.join(PACKAGE_DIRECTORY, 'dist', 'bin.js');
export const FIXTURES = path.join(PACKAGE_DIRECTORY, 'test', 'fixtures');
export const ARTIFACTS = path.join(PACKAGE_DIRECTORY, 'test-artifacts');

/** The CLI tests spawn the built binary, as a user would: build first (`npx tsup`). */
export function assertBuilt(): void {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run "npx tsup" in packages/cli before the tests`);
}

export interface CliOutcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly input?: string;
  readonly timeoutMs?: number;
}

/**
 * The tests write configurations into temporary directories and rewrite them between runs; the CLI
 * loads them without `stepwise trust` (see the README's "Trusted configuration"). Set on this
 * process so children started through tmux get it too. The trust tests set it to '' to check it.
 */
process.env.STEPWISE_TRUSTED_PATHS = [os.tmpdir(), FIXTURES].join(path.delimiter);

/** Environment for the child: no colours, no inherited STEPWISE_* settings. */
export function cliEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', ...extra };
  delete env.FORCE_COLOR;
  return env;
}

export function startCli(args: readonly string[], options: CliOptions): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd,
    env: cliEnvironment(options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Runs `stepwise …` to the end and collects its output. */
export function runCli(args: readonly string[], options: CliOptions): Promise<CliOutcome> {
  return new Promise((resolve, reject) => {
    const child = startCli(args, options);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`stepwise ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin?.end(options.input ?? '');
  });
}

/** A temporary workspace with a small project in it. */
export async function createWorkspace(files: Record<string, string> = {}): Promise<{
  directory: string;
  write(name: string, contents: unknown): Promise<string>;
  dispose(): Promise<void>;
}> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'stepwise-cli-'));
  const write = async (name: string, contents: unknown) => {
    const file = path.join(directory, name);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, typeof contents === 'string' ? contents : `${JSON.stringify(contents, null, 2)}\n`);
    return file;
  };
  await write('package.json', { name: 'sample', version: '1.0.0', scripts: { test: 'node --test' } });
  await write('README.md', '# Sample\n\nA sample project.\n');
  for (const [name, contents] of Object.entries(files)) await write(name, contents);
  return { directory, write, dispose: () => rm(directory, { recursive: true, force: true }) };
}

/** Parses JSONL, failing with the offending line when one does not parse. */
export function parseJsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line, index) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`line ${index + 1} is not JSON: ${line}`);
      }
    });
}

/** The workspace most CLI tests share: a small project, the test plugin (counting its calls) and a config. */
export interface CliWorkspace {
  readonly directory: string;
  readonly counterFile: string;
  write(name: string, contents: unknown): Promise<string>;
  stepwise(args: readonly string[], options?: { env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<CliOutcome>;
  /** Lines the test plugin wrote (`start x`, `end x`, …). */
  readCalls(): Promise<string[]>;
  resetCalls(): Promise<void>;
}

/** Registers beforeAll/afterAll that create and remove a CLI workspace; use its members inside tests. */
export function useCliWorkspace(config: Record<string, unknown> = {}): CliWorkspace {
  let workspace: Awaited<ReturnType<typeof createWorkspace>> | undefined;
  const current = () => {
    if (!workspace) throw new Error('the workspace exists only inside tests');
    return workspace;
  };
  beforeAll(async () => {
    assertBuilt();
    workspace = await createWorkspace({ 'src/math.js': 'export function add(a, b) {\n  return a + b;\n}\n' });
    const counterFile = path.join(workspace.directory, 'calls.log');
    await workspace.write('stepwise.config.json', {
      commands: { allow: ['node'] },
      leaseTtlMs: 1000,
      retry: { maxAttempts: 1 },
      plugins: [{ module: path.join(FIXTURES, 'test-plugin.mjs'), options: { counterFile } }],
      ...config,
    });
  });
  afterAll(async () => {
    await workspace?.dispose();
  });
  return {
    get directory() {
      return current().directory;
    },
    get counterFile() {
      return path.join(current().directory, 'calls.log');
    },
    write: (name, contents) => current().write(name, contents),
    stepwise: (args, options = {}) => runCli(args, { cwd: current().directory, timeoutMs: 45_000, ...options }),
    async readCalls() {
      const text = await readFile(path.join(current().directory, 'calls.log'), 'utf8').catch(() => '');
      return text.split('\n').filter(Boolean);
    },
    async resetCalls() {
      await writeFile(path.join(current().directory, 'calls.log'), '');
    },
  };
}

/** Runs `main()` in this process with captured streams: for output checks that need no process. */
export async function inProcess(
  args: readonly string[],
  cwd = os.tmpdir(),
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { main } = await import('../src/main.js');
  let stdout = '';
  let stderr = '';
  const stream = (append: (text: string) => void) =>
    ({
      write: (chunk: string) => {
        append(chunk);
        return true;
      },
      isTTY: false,
    }) as unknown as NodeJS.WritableStream;
  const code = await main(args, {
    stdout: stream((text) => {
      stdout += text;
    }),
    stderr: stream((text) => {
      stderr += text;
    }),
    stdin: process.stdin,
    env: { NO_COLOR: '1', STEPWISE_TRUSTED_PATHS: process.env.STEPWISE_TRUSTED_PATHS },
    cwd,
  });
  return { code, stdout, stderr };
}

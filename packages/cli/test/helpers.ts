import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempWorkspace } from './helpers.js';

const example = fileURLToPath(new URL('../../../examples/agentic-fix-test/', import.meta.url));

function run(args: string[]): Promise<{ code: number | null; output: string }> {
  const env = { ...process.env };
  delete env.STEPWISE_MODEL_URL;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(example, 'run.mjs'), ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('examples/agentic-fix-test in scripted mode', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('reads the failing test, edits the source, runs the tests and completes', async () => {
    const scratch = await tempWorkspace('agentic-example-');
    cleanups.push(scratch.cleanup);
    const workspace = path.join(scratch.dir, 'project');
    const { code, output } = await run(['--workspace', workspace]);

    expect(output).toContain('run completed: step succeeded');
    expect(code).toBe(0);
    expect(output).toMatch(/turn 1: file_read\(\{"path":"test\/math.test.js"\}\)/);
    expect(output).toMatch(/turn 4: file_edit/);
    expect(output).toMatch(/turn 5: run_command\(\{"command":\["node","--test"\]\}\)\n {2}run_command succeeded/);
    expect(readFileSync(path.join(workspace, 'src/math.js'), 'utf8')).toContain('return a + b;');
    // The test itself was not touched.
    expect(readFileSync(path.join(workspace, 'test/math.test.js'), 'utf8')).toBe(
      readFileSync(path.join(example, 'project/test/math.test.js'), 'utf8'),
    );
  }, 60_000);
});

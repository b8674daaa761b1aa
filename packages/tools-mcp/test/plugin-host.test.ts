import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ToolRegistry } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('the third-party plugin example', () => {
  it('is installed by package name and runs a plan in the example host', async () => {
    const script = fileURLToPath(new URL('../../../examples/plugin-host/run-host.mjs', import.meta.url));
    const { stdout } = await run(process.execPath, [script]);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toContain('without a prefix: E602');
    expect(lines).toContain('tools: hello, hi_hello');
    expect(JSON.parse(lines.at(-1)!)).toEqual({
      status: 'completed',
      outputs: [{ greeting: 'Hello, Ada!' }, { greeting: 'HELLO, GRACE!' }, { greeting: 'Hi, Hello, Ada!!' }],
    });
  });

  it('is validated and guarded by the kernel like any tool', async () => {
    // Resolved by name from node_modules, exactly as a host application would.
    const { default: hello } = await import('stepwise-plugin-hello');
    const registry = new ToolRegistry();
    await registry.use(hello);
    expect(registry.get('greet')?.name).toBe('hello');
    const engine = dagEngine({ tools: registry, retry: { maxAttempts: 1 } });
    // The plugin's JSON Schema refuses the plan before anything runs.
    expect(() => engine.run(makePlan([{ id: 'bad', tool: 'hello', args: { name: '' } }]))).toThrow(
      expect.objectContaining({
        code: 'E202',
        details: { problems: [expect.objectContaining({ path: '/steps/0/args/name' })] },
      }),
    );
    // Its ToolError reaches the step result with its own code.
    const result = await engine.run(makePlan([{ id: 'nobody', tool: 'greet', args: { name: 'nobody' } }])).result;
    expect(result.steps[0]).toMatchObject({ status: 'failed', error: { code: 'E301', retryable: false } });
  });
});

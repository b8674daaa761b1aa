import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineTool, ErrorCodes, readAll, StepwiseError, ToolRegistry } from '@stepwise/core';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agenticEngine, heuristicEstimator } from '../src/index.js';
import { complete, latestToolResults, scriptedModel } from '../src/testing/index.js';
import { ofType, tempWorkspace } from './helpers.js';

const child = fileURLToPath(new URL('./fixtures/crash-child.mjs', import.meta.url));

/** Starts the child, waits until its hanging tool runs, and SIGKILLs it. */
function runUntilHangThenKill(args: string[]): Promise<{ signal: NodeJS.Signals | null; output: string }> {
  return new Promise((resolve, reject) => {
    const process_ = spawn(process.execPath, [child, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const timer = setTimeout(() => {
      process_.kill('SIGKILL');
      reject(new Error(`the child never reached its hanging tool:\n${output}`));
    }, 30_000);
    process_.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('ready')) process_.kill('SIGKILL');
    });
    process_.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    process_.on('exit', (_code, signal) => {
      clearTimeout(timer);
      resolve({ signal, output });
    });
  });
}

function parentTools(workdir: string, calls: string[]) {
  const waited = (name: string, effect: 'read' | 'write') =>
    defineTool({
      name,
      description: 'Returns at once after a resume.',
      input: z.object({}),
      effect,
      execute: () => {
        calls.push(name);
        return { waited: true };
      },
    });
  return new ToolRegistry([
    defineTool({
      name: 'append_line',
      description: 'Appends a line to lines.txt (not idempotent).',
      input: z.object({ text: z.string() }),
      effect: 'write',
      execute: ({ text }) => {
        calls.push('append_line');
        appendFileSync(path.join(workdir, 'lines.txt'), `${text}\n`);
        return { appended: text };
      },
    }),
    waited('wait_read', 'read'),
    waited('wait_write', 'write'),
  ]);
}

async function resumeOnceLeaseExpires(engine: ReturnType<typeof agenticEngine>, runId: string) {
  for (let tries = 0; ; tries++) {
    try {
      return await engine.resume(runId).result;
    } catch (error) {
      if (!(StepwiseError.isInstance(error) && error.code === ErrorCodes.LEASE_CONFLICT) || tries > 60) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe('resume after SIGKILL (SQLite store, real child process)', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('reruns an in-flight idempotent call, repeats no finished call and no model call', async () => {
    const workspace = await tempWorkspace();
    cleanups.push(workspace.cleanup);
    const database = path.join(workspace.dir, 'runs.db');
    const killed = await runUntilHangThenKill([database, workspace.dir, 'run_killed', 'wait_read']);
    expect(killed.signal).toBe('SIGKILL');
    expect(readFileSync(path.join(workspace.dir, 'lines.txt'), 'utf8')).toBe('one\ntwo\n');

    const store = createSqliteStore({ path: database });
    cleanups.push(() => store.close());
    const calls: string[] = [];
    const model = scriptedModel(({ request }) => {
      const toolResults = request.messages
        .filter((message) => message.role === 'tool')
        .map((message) => message.content);
      expect(toolResults).toEqual(['{"appended":"one"}', '{"appended":"two"}', '{"waited":true}']);
      return complete('two lines appended');
    });
    const engine = agenticEngine({
      model,
      tools: parentTools(workspace.dir, calls),
      store,
      workspace: workspace.dir,
      tokenEstimator: heuristicEstimator,
    });
    const result = await resumeOnceLeaseExpires(engine, 'run_killed');

    expect(result.status).toBe('completed');
    expect(model.calls).toBe(1);
    expect(latestToolResults(model.requests[0]!).map((entry) => entry.name)).toEqual(['append_line', 'wait_read']);
    // Only the interrupted idempotent call ran again; both appends stay single.
    expect(calls).toEqual(['wait_read']);
    expect(readFileSync(path.join(workspace.dir, 'lines.txt'), 'utf8')).toBe('one\ntwo\n');

    const events = await readAll(store, 'run_killed');
    expect(ofType(events, 'model-call').map((event) => event.turn)).toEqual([1, 2, 3]);
    expect(ofType(events, 'run-resume')).toMatchObject([{ interrupted: [{ stepId: 'work', action: 'rerun' }] }]);
    expect(ofType(events, 'run-end')).toMatchObject([{ status: 'completed' }]);
    const executions = await store.listExecutions('run_killed', 'work');
    expect(executions.map((execution) => [execution.tool, execution.turn, execution.status])).toEqual([
      ['append_line', 1, 'succeeded'],
      ['append_line', 2, 'succeeded'],
      ['wait_read', 2, 'succeeded'],
    ]);
  }, 60_000);

  it('tells the model an in-flight non-idempotent call was interrupted instead of repeating it', async () => {
    const workspace = await tempWorkspace();
    cleanups.push(workspace.cleanup);
    const database = path.join(workspace.dir, 'runs.db');
    const killed = await runUntilHangThenKill([database, workspace.dir, 'run_write', 'wait_write']);
    expect(killed.signal).toBe('SIGKILL');

    const store = createSqliteStore({ path: database });
    cleanups.push(() => store.close());
    const calls: string[] = [];
    const model = scriptedModel([complete('checked: the write may have happened')]);
    const engine = agenticEngine({
      model,
      tools: parentTools(workspace.dir, calls),
      store,
      workspace: workspace.dir,
      tokenEstimator: heuristicEstimator,
    });
    const result = await resumeOnceLeaseExpires(engine, 'run_write');

    expect(result.status).toBe('completed');
    expect(calls).toEqual([]);
    expect(latestToolResults(model.requests[0]!).at(-1)?.content).toMatch(/^ERROR E309: wait_write was running/);
    const executions = await store.listExecutions('run_write', 'work');
    expect(executions.find((execution) => execution.tool === 'wait_write')).toMatchObject({
      status: 'failed',
      error: { code: ErrorCodes.STEP_INTERRUPTED },
    });
  }, 60_000);
});

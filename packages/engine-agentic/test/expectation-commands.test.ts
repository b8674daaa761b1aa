import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ErrorCodes } from '@stepwise/core';
import { afterEach, describe, expect, it } from 'vitest';
import { complete, latestToolResults, scriptedModel } from '../src/testing/index.js';
import { goalPlan, nodeToolRegistry, ofType, tempWorkspace, testEngine, testTools } from './helpers.js';

/** A script that leaves a file behind when it runs: the evidence that a command ran at all. */
const MARKER_SCRIPT = 'import { writeFileSync } from "node:fs";\nwriteFileSync("ran.txt", "ran");\n';

describe('commands in expect criteria run only through the kernel', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function workspaceWithMarker() {
    const workspace = await tempWorkspace();
    cleanups.push(workspace.cleanup);
    await writeFile(path.join(workspace.dir, 'mark.mjs'), MARKER_SCRIPT);
    return workspace;
  }

  it('fails a command_succeeds step with E201 when no command tool is registered, spawning nothing', async () => {
    const workspace = await workspaceWithMarker();
    const model = scriptedModel([complete('done')]);
    const { engine, events } = testEngine({ model, tools: testTools().registry, workspace: workspace.dir });
    const result = await engine.run(
      goalPlan([
        {
          id: 'check',
          expect: [
            { kind: 'output_matches', pattern: 'done' },
            { kind: 'command_succeeds', argv: ['node', 'mark.mjs'] },
          ],
        },
      ]),
    ).result;
    expect(result.steps[0]?.status).toBe('failed');
    expect(result.steps[0]?.error).toMatchObject({ code: ErrorCodes.TOOL_UNKNOWN, location: '/steps/0/expect/1' });
    expect(result.steps[0]?.error?.message).toContain('"run_command"');
    expect(model.calls).toBe(0);
    expect(existsSync(path.join(workspace.dir, 'ran.txt'))).toBe(false);
    expect(ofType(events, 'tool-call')).toHaveLength(0);
  });

  it("fails the step with E201 when a custom checker's runCommand has no command tool, spawning nothing", async () => {
    const workspace = await workspaceWithMarker();
    const model = scriptedModel([complete('done')]);
    const { engine } = testEngine({
      model,
      tools: testTools().registry,
      workspace: workspace.dir,
      expectations: { tests_pass: (_expectation, context) => context.runCommand(['node', 'mark.mjs']) },
    });
    const result = await engine.run(goalPlan([{ id: 'check', expect: [{ kind: 'tests_pass' }] }])).result;
    expect(result.steps[0]?.status).toBe('failed');
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.TOOL_UNKNOWN);
    // The model asked once (complete_step); the check ended the step instead of arguing with it.
    expect(model.calls).toBe(1);
    expect(existsSync(path.join(workspace.dir, 'ran.txt'))).toBe(false);
  });

  it('runs command_succeeds through run_command under the approval policy: denied, it does not run and is journaled', async () => {
    const workspace = await workspaceWithMarker();
    const tools = await nodeToolRegistry(workspace.dir);
    const model = scriptedModel([complete('done'), complete('done again')]);
    const { engine, events } = testEngine({
      model,
      tools: tools.registry,
      workspace: workspace.dir,
      approvals: { policy: { effects: { exec: 'deny' } } },
      limits: { maxTurns: 2 },
    });
    const result = await engine.run(
      goalPlan([{ id: 'check', expect: [{ kind: 'command_succeeds', argv: ['node', 'mark.mjs'] }] }]),
    ).result;
    expect(result.steps[0]?.status).toBe('failed');
    expect(existsSync(path.join(workspace.dir, 'ran.txt'))).toBe(false);
    const decisions = ofType(events, 'approval-decision');
    expect(decisions.length).toBeGreaterThan(0);
    expect(decisions.every((event) => event.decision === 'denied')).toBe(true);
    expect(latestToolResults(model.requests[1]!)[0]?.content).toMatch(/node mark\.mjs` did not succeed/);
  });

  it('runs command_succeeds through run_command when approved: the command runs, journaled as a tool call', async () => {
    const workspace = await workspaceWithMarker();
    const tools = await nodeToolRegistry(workspace.dir);
    const model = scriptedModel([complete('done')]);
    const { engine, events } = testEngine({
      model,
      tools: tools.registry,
      workspace: workspace.dir,
      approvals: { policy: { tools: { run_command: 'auto' } } },
    });
    const result = await engine.run(
      goalPlan([{ id: 'check', expect: [{ kind: 'command_succeeds', argv: ['node', 'mark.mjs'] }] }]),
    ).result;
    expect(result.status).toBe('completed');
    expect(existsSync(path.join(workspace.dir, 'ran.txt'))).toBe(true);
    const calls = ofType(events, 'tool-call');
    expect(calls.map((event) => [event.tool, event.args])).toEqual([
      ['run_command', { command: ['node', 'mark.mjs'] }],
    ]);
    const results = ofType(events, 'tool-result');
    expect(results).toHaveLength(1);
    // tools-node records how the command ran (in the OS sandbox where bubblewrap starts).
    expect((results[0]?.output as { sandbox?: { kind?: string } } | undefined)?.sandbox?.kind).toMatch(
      /^(bubblewrap|none)$/,
    );
  });
});

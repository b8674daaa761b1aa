import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { defineTool, ErrorCodes, ToolError } from '@stepwise/core';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { heuristicEstimator, promptTokens } from '../src/index.js';
import { analysis, blocked, complete, latestToolResults, scriptedModel, toolCall } from '../src/testing/index.js';
import { goalPlan, nodeToolRegistry, ofType, tempWorkspace, testEngine, testTools } from './helpers.js';

const usage = (total: number) => ({ promptTokens: total - 10, completionTokens: 10, totalTokens: total });

describe('the agentic loop', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('runs a multi-turn step: tools, analysis, completion; journals every turn before its tool calls', async () => {
    const tools = testTools();
    const model = scriptedModel([
      { ...toolCall('echo', { value: 'first' }), usage: usage(100) },
      { text: 'The echo returned "first". Next I write a note.', usage: usage(120) },
      { ...toolCall('note', { text: 'hello' }), usage: usage(130) },
      { ...complete('echoed and noted', { result: { noted: true } }), usage: usage(150) },
    ]);
    const { engine, events } = testEngine({ model, tools: tools.registry });
    const handle = engine.run(goalPlan([{ id: 'work', description: 'echo, then write a note' }]));
    const result = await handle.result;

    expect(result.status).toBe('completed');
    const step = result.steps[0];
    expect(step?.status).toBe('succeeded');
    expect(step?.tool).toBeUndefined();
    expect(step?.output).toEqual({ summary: 'echoed and noted', result: { noted: true }, turns: 4 });
    expect(step?.usage).toEqual({ promptTokens: 460, completionTokens: 40, totalTokens: 500 });
    expect(result.usage?.totalTokens).toBe(500);
    expect(tools.log.calls.map((call) => call.tool)).toEqual(['echo', 'note']);

    const modelCalls = ofType(events, 'model-call');
    expect(modelCalls.map((event) => event.turn)).toEqual([1, 2, 3, 4]);
    expect(modelCalls.every((event) => event.model === 'scripted' && event.latencyMs >= 0)).toBe(true);
    // Each tool call is journaled after the model call that asked for it, tagged with its turn.
    for (const toolCallEvent of ofType(events, 'tool-call')) {
      const asking = modelCalls.find((event) => event.turn === toolCallEvent.turn);
      expect(asking).toBeDefined();
      expect(asking!.seq).toBeLessThan(toolCallEvent.seq);
    }
    expect(ofType(events, 'tool-call').map((event) => event.turn)).toEqual([1, 3]);
    expect(ofType(events, 'run-end')[0]?.usage?.totalTokens).toBe(500);
    expect(events[0]?.type).toBe('run-start');

    // The model saw the plan goal, the step and the tool result.
    const first = model.requests[0]!;
    expect(first.messages[0]?.role).toBe('system');
    expect(first.messages[1]?.content).toContain('echo, then write a note');
    expect(first.messages[1]?.content).toContain('exercise the agentic engine');
    expect(first.tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['echo', 'complete_step', 'report_blocked']),
    );
    expect(latestToolResults(model.requests[1]!)).toEqual([{ name: 'echo', content: '{"value":"first"}' }]);
  });

  it('feeds a tool error back to the model, which recovers', async () => {
    const tools = testTools();
    const model = scriptedModel([
      toolCall('fail', { message: 'disk on fire' }),
      toolCall('echo', { value: 'retry another way' }),
      complete('recovered'),
    ]);
    const { engine } = testEngine({ model, tools: tools.registry });
    const result = await engine.run(goalPlan([{ id: 'work' }])).result;
    expect(result.status).toBe('completed');
    expect(latestToolResults(model.requests[1]!)[0]?.content).toBe('ERROR E300: disk on fire');
    expect(tools.log.count('echo')).toBe(1);
  });

  it('tells the model about invalid arguments and unknown tools without calling anything', async () => {
    const tools = testTools();
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'echo', arguments: '{"value": oops' },
          { name: 'teleport', arguments: {} },
        ],
      },
      toolCall('note', { text: 42 }),
      complete('done'),
    ]);
    const { engine } = testEngine({ model, tools: tools.registry, limits: { maxToolFailures: 5 } });
    const result = await engine.run(goalPlan([{ id: 'work' }])).result;
    expect(result.status).toBe('completed');
    const [parse, unknown] = latestToolResults(model.requests[1]!);
    expect(parse?.content).toMatch(/^ERROR E202: arguments are not valid JSON/);
    expect(unknown?.content).toMatch(/^ERROR E201: there is no tool "teleport"/);
    expect(latestToolResults(model.requests[2]!)[0]?.content).toMatch(/^ERROR E202: invalid arguments for note/);
    expect(tools.log.calls).toEqual([]);
  });

  it('fails the step with E403 and journals limit-reach when the turns run out', async () => {
    const tools = testTools();
    const model = scriptedModel(() => analysis('still thinking'));
    const { engine, events } = testEngine({ model, tools: tools.registry, limits: { maxTurns: 3 } });
    const result = await engine.run(goalPlan([{ id: 'think' }])).result;
    expect(result.status).toBe('failed');
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.TURN_LIMIT);
    expect(model.calls).toBe(3);
    expect(ofType(events, 'limit-reach')).toMatchObject([{ stepId: 'think', limit: 'turns', value: 3 }]);
    // The last turn is announced.
    expect(model.requests[2]!.messages.at(-1)?.content).toMatch(/one turn left/);
  });

  it("uses the step's own maxTurns over the engine limit", async () => {
    const model = scriptedModel(() => analysis('hmm'));
    const { engine } = testEngine({ model, tools: testTools().registry, limits: { maxTurns: 9 } });
    const result = await engine.run(goalPlan([{ id: 'think', maxTurns: 2 }])).result;
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.TURN_LIMIT);
    expect(model.calls).toBe(2);
  });

  it('fails the step with E404 after too many failed tool calls', async () => {
    const tools = testTools();
    const model = scriptedModel(() => toolCall('fail'));
    const { engine, events } = testEngine({ model, tools: tools.registry, limits: { maxToolFailures: 3 } });
    const result = await engine.run(goalPlan([{ id: 'flail' }])).result;
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.TOOL_FAILURE_LIMIT);
    expect(tools.log.count('fail')).toBe(3);
    expect(ofType(events, 'limit-reach')).toMatchObject([{ limit: 'tool-failures', value: 3 }]);
  });

  it('demands an analysis after too many consecutive tool calls, and refuses more tools until then', async () => {
    const tools = testTools();
    const model = scriptedModel([
      toolCall('echo', { value: 1 }),
      toolCall('echo', { value: 2 }),
      toolCall('echo', { value: 3 }), // ignored: analysis required
      analysis('Two echoes returned 1 and 2.'),
      complete('done'),
    ]);
    const { engine, events } = testEngine({ model, tools: tools.registry, limits: { maxConsecutiveToolCalls: 2 } });
    const result = await engine.run(goalPlan([{ id: 'work' }])).result;
    expect(result.status).toBe('completed');
    expect(tools.log.count('echo')).toBe(2);
    expect(ofType(events, 'limit-reach')).toMatchObject([{ limit: 'consecutive-tool-calls', value: 2 }]);
    expect(model.requests.map((request) => request.toolChoice)).toEqual(['auto', 'auto', 'none', 'none', 'auto']);
    expect(model.requests[2]!.messages.at(-1)?.content).toMatch(/write your analysis/);
    expect(latestToolResults(model.requests[3]!)[0]?.content).toMatch(/^Not run: analyse/);
  });

  it('fails the step with E405 once its token budget is spent', async () => {
    const model = scriptedModel(() => ({ ...toolCall('echo', { value: 'x' }), usage: usage(100) }));
    const { engine, events } = testEngine({
      model,
      tools: testTools().registry,
      limits: { tokenBudget: 250, maxConsecutiveToolCalls: 50 },
    });
    const result = await engine.run(goalPlan([{ id: 'spend' }])).result;
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.TOKEN_BUDGET);
    expect(model.calls).toBe(3);
    expect(result.steps[0]?.usage?.totalTokens).toBe(300);
    expect(ofType(events, 'limit-reach')).toMatchObject([{ limit: 'token-budget', value: 300 }]);
  });

  it('fails the step with E406 when the model reports it blocked; a critical step fails the run', async () => {
    const model = scriptedModel([blocked('the repository is read-only')]);
    const { engine } = testEngine({ model, tools: testTools().registry });
    const result = await engine.run(goalPlan([{ id: 'a' }, { id: 'b', dependsOn: ['a'] }])).result;
    expect(result.status).toBe('failed');
    expect(result.steps.map((step) => step.status)).toEqual(['failed', 'skipped']);
    expect(result.steps[0]?.error).toMatchObject({
      code: ErrorCodes.STEP_BLOCKED,
      details: { reason: 'the repository is read-only' },
    });
    expect(model.calls).toBe(1);
  });

  it('catches premature completion with expect criteria and accepts once they hold (tools-node)', async () => {
    const workspace = await tempWorkspace();
    cleanups.push(workspace.cleanup);
    await writeFile(
      path.join(workspace.dir, 'check.mjs'),
      'import { readFileSync } from "node:fs";\nprocess.exit(readFileSync("report.txt", "utf8").includes("PASS") ? 0 : 1);\n',
    );
    const tools = await nodeToolRegistry(workspace.dir);
    const model = scriptedModel([
      complete('all done (not really)'),
      toolCall('file_write', { path: 'report.txt', contents: 'PASS 3 tests' }),
      complete('report written: PASS'),
    ]);
    const { engine, events } = testEngine({
      model,
      tools: tools.registry,
      workspace: workspace.dir,
      approvals: { policy: { tools: { run_command: 'auto' } } },
    });
    const result = await engine.run(
      goalPlan([
        {
          id: 'report',
          description: 'write the report',
          expect: [
            { kind: 'file_exists', path: 'report.txt' },
            { kind: 'command_succeeds', argv: ['node', 'check.mjs'] },
            { kind: 'output_matches', pattern: 'PASS' },
            { kind: 'output_matches', pattern: '"bytes":12', target: 'tools' },
          ],
        },
      ]),
    ).result;
    expect(result.steps[0]?.error).toBeUndefined();
    expect(result.status).toBe('completed');
    const rejection = latestToolResults(model.requests[1]!)[0]?.content ?? '';
    expect(rejection).toMatch(/^Not accepted/);
    expect(rejection).toContain('the file report.txt does not exist');
    expect(rejection).toMatch(/node check.mjs` did not succeed/);
    expect(rejection).toContain('matches /PASS/');
    expect(model.requests[0]!.messages[1]?.content).toContain('the file report.txt exists');
    expect(readFileSync(path.join(workspace.dir, 'report.txt'), 'utf8')).toBe('PASS 3 tests');
    // Both checks of the command went through the kernel's run_command.
    expect(ofType(events, 'tool-call').map((event) => event.tool)).toEqual([
      'run_command',
      'file_write',
      'run_command',
    ]);
  });

  it('returns a sandbox violation to the model as a tool error (tools-node)', async () => {
    const workspace = await tempWorkspace();
    cleanups.push(workspace.cleanup);
    const tools = await nodeToolRegistry(workspace.dir);
    const model = scriptedModel([
      toolCall('file_read', { path: '../../../etc/passwd' }),
      toolCall('run_command', { command: ['curl', 'https://example.com'] }),
      blocked('everything outside the workspace is off limits'),
    ]);
    const { engine } = testEngine({
      model,
      tools: tools.registry,
      workspace: workspace.dir,
      approvals: { policy: { tools: { run_command: 'auto' } } },
    });
    const result = await engine.run(goalPlan([{ id: 'escape' }])).result;
    expect(latestToolResults(model.requests[1]!)[0]?.content).toMatch(/^ERROR E402: /);
    expect(latestToolResults(model.requests[2]!)[0]?.content).toMatch(/^ERROR E303: /);
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.STEP_BLOCKED);
  });

  it("checks command_succeeds through the registry's run_command, with its approval policy", async () => {
    const tools = testTools();
    tools.registry.register(
      defineTool({
        name: 'run_command',
        description: 'Runs argv.',
        input: z.object({ command: z.array(z.string()) }),
        effect: 'exec',
        execute: (input) => {
          tools.log.calls.push({ tool: 'run_command', args: input, stepId: 'check', attempt: 1 });
          // The note is the fix: the check passes once it was written.
          if (tools.log.count('note') === 0) {
            throw new ToolError({ code: 'E304', message: 'exit code 1', details: { exitCode: 1 } });
          }
          return { exitCode: 0 };
        },
      }),
    );
    const model = scriptedModel([
      complete('tests pass'),
      toolCall('note', { text: 'fix' }),
      complete('tests pass now'),
    ]);
    const { engine, events } = testEngine({
      model,
      tools: tools.registry,
      approvals: { policy: { tools: { run_command: 'auto' } } },
    });
    const handle = engine.run(
      goalPlan([{ id: 'check', expect: [{ kind: 'command_succeeds', argv: ['npm', 'test'] }] }]),
    );
    const result = await handle.result;
    expect(result.status).toBe('completed');
    expect(tools.log.calls.filter((call) => call.tool === 'run_command').map((call) => call.args)).toEqual([
      { command: ['npm', 'test'] },
      { command: ['npm', 'test'] },
    ]);
    expect(latestToolResults(model.requests[1]!)[0]?.content).toMatch(/npm test` did not succeed: exit code 1/);
    expect(ofType(events, 'tool-call').filter((event) => event.tool === 'run_command')).toHaveLength(2);
  });

  it('fails a step whose expect criteria cannot be checked, before calling the model', async () => {
    const model = scriptedModel([complete('x')]);
    const { engine } = testEngine({ model, tools: testTools().registry });
    const result = await engine.run(
      goalPlan([{ id: 'odd', expect: [{ kind: 'moon_is_full' }, { kind: 'command_succeeds', argv: 'ls' }] }]),
    ).result;
    expect(result.steps[0]?.error).toMatchObject({ code: ErrorCodes.PLAN_INVALID, location: '/steps/0/expect/0/kind' });
    expect(model.calls).toBe(0);
  });

  it('returns an approval denial to the model as a tool result and journals it', async () => {
    const tools = testTools();
    const model = scriptedModel([toolCall('note', { text: 'rm -rf' }), blocked('writing was denied')]);
    const { engine, events } = testEngine({
      model,
      tools: tools.registry,
      approvals: {
        policy: { effects: { write: 'prompt' } },
        handler: async () => ({ decision: 'deny', by: 'alice', reason: 'not today' }),
      },
    });
    const result = await engine.run(goalPlan([{ id: 'risky' }])).result;
    expect(tools.log.count('note')).toBe(0);
    expect(latestToolResults(model.requests[1]!)[0]?.content).toMatch(/^DENIED: note was denied: not today/);
    expect(ofType(events, 'approval-decision')).toMatchObject([{ decision: 'denied', by: 'alice', source: 'handler' }]);
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.STEP_BLOCKED);
  });

  it('keeps every prompt within the context budget: sliding window and truncated tool results', async () => {
    const tools = testTools();
    const model = scriptedModel(({ call }) =>
      call < 6 ? toolCall('big', { lines: 40 + call * 30 }) : complete('read it all'),
    );
    const budget = 1_200;
    const { engine } = testEngine({
      model,
      tools: tools.registry,
      limits: { maxContextTokens: budget, maxToolResultTokens: 300, maxConsecutiveToolCalls: 50 },
    });
    const result = await engine.run(goalPlan([{ id: 'read', description: 'read big outputs' }])).result;
    expect(result.status).toBe('completed');
    for (const request of model.requests) {
      expect(promptTokens(request.messages, request.tools, heuristicEstimator)).toBeLessThanOrEqual(budget);
      // Always the system prompt and the step.
      expect(request.messages[0]?.role).toBe('system');
      expect(request.messages[1]?.content).toContain('read big outputs');
    }
    const results = latestToolResults(model.requests[1]!);
    expect(results[0]?.content).toMatch(/\[truncated \d+ tokens\]/);
    expect(results[0]?.content).toMatch(/^line 0:/);
    expect(results[0]?.content).toMatch(/line 39: lorem ipsum dolor sit amet$/);
    // Older turns were dropped, and the model was told.
    expect(model.requests.at(-1)!.messages[1]?.content).toMatch(/earlier messages of this step were left out/);
    // The full text is kept as an artifact.
    const artifacts = result.steps[0]?.artifacts ?? [];
    expect(artifacts.length).toBeGreaterThan(0);
    expect(artifacts[0]?.content).toContain('line 39: lorem ipsum dolor sit amet');
    expect(artifacts[0]?.content).not.toContain('[truncated');
  });

  it('fails with E405 when the system prompt and step alone exceed the context budget', async () => {
    const model = scriptedModel([complete('x')]);
    const { engine, events } = testEngine({ model, tools: testTools().registry, limits: { maxContextTokens: 50 } });
    const result = await engine.run(goalPlan([{ id: 'tiny' }])).result;
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.TOKEN_BUDGET);
    expect(model.calls).toBe(0);
    expect(ofType(events, 'limit-reach')).toMatchObject([{ limit: 'token-budget' }]);
  });

  it('offers only the tools the step lists and refuses others', async () => {
    const tools = testTools();
    const model = scriptedModel([toolCall('note', { text: 'x' }), toolCall('echo', { value: 1 }), complete('ok')]);
    const { engine } = testEngine({ model, tools: tools.registry });
    await engine.run(goalPlan([{ id: 'narrow', tools: ['echo'] }])).result;
    expect(model.requests[0]!.tools.map((tool) => tool.name)).toEqual(['echo', 'complete_step', 'report_blocked']);
    expect(latestToolResults(model.requests[1]!)[0]?.content).toMatch(/^ERROR E201/);
    expect(tools.log.calls.map((call) => call.tool)).toEqual(['echo']);
  });

  it('estimates usage when the model reports none, and says so in the journal', async () => {
    const model = scriptedModel([complete('done')]);
    const { engine, events } = testEngine({ model, tools: testTools().registry });
    const result = await engine.run(goalPlan([{ id: 'x' }])).result;
    expect(result.steps[0]?.usage?.promptTokens).toBeGreaterThan(50);
    expect(ofType(events, 'model-call')[0]?.response).toMatchObject({ usageEstimated: true });
  });
});

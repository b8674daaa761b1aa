import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StepwiseError, ToolError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { createRedactor } from '../journal/redact.js';
import { readAll } from '../journal/run-store.js';
import type { Plan } from '../plan/plan-schema.js';
import { validatePlan } from '../plan/validate-plan.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { createTestTools } from '../testing/fixtures.js';
import { defineTool } from '../tools/define-tool.js';
import { describeProcess } from '../tools/process-groups.js';
import { reopenRun } from './run-session.js';

const SECRET = 'Zq7-hunter2-Secret-42x';

function engineWith(store = new MemoryStore()) {
  const { registry } = createTestTools();
  registry.register(
    defineTool({
      name: 'deep_output',
      description: 'Returns an output nested as deep as asked.',
      input: z.object({ depth: z.number() }),
      effect: 'read',
      execute: ({ depth }) => nested(depth),
    }),
  );
  registry.register(
    defineTool({
      name: 'deep_error',
      description: 'Throws an error whose details are nested as deep as asked.',
      input: z.object({ depth: z.number() }),
      effect: 'read',
      execute: ({ depth }) => {
        throw new ToolError({ message: `failed with ${SECRET}`, details: { nested: nested(depth) } });
      },
    }),
  );
  const options = { tools: registry, store, redactor: createRedactor({ secrets: [SECRET] }) };
  return { store, engine: createPolicyEngine({ policy: permissivePolicy(options), options }) };
}

function nested(depth: number): Record<string, unknown> {
  let value: unknown = SECRET;
  for (let level = 0; level < depth; level++) value = { a: value };
  return value as Record<string, unknown>;
}

/** The error `run` throws, or undefined. */
function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('plan ids are redacted wherever they are journaled or returned', () => {
  it('run-start, the journaled plan, RunResult, the run summary and the fold agree, without the secret', async () => {
    const { engine, store } = engineWith();
    const plan: Plan = { id: `deploy-${SECRET}`, steps: [{ id: 'a', tool: 'echo', args: { value: 1 } }] };
    const result = await engine.run(plan).result;
    expect(result.status).toBe('completed');
    expect(result.planId).toBe('deploy-[REDACTED]');
    const events = await readAll(store, result.runId);
    expect(events[0]).toMatchObject({
      type: 'run-start',
      planId: 'deploy-[REDACTED]',
      plan: { id: 'deploy-[REDACTED]' },
    });
    expect((await store.getRun(result.runId))?.planId).toBe('deploy-[REDACTED]');
    expect(JSON.stringify([events, await store.listRuns(), result])).not.toContain(SECRET);
    // Run again by its id: the recorded result is replayed, from the fold.
    const replayed = await engine.run(plan, { runId: result.runId }).result;
    expect(replayed.planId).toBe('deploy-[REDACTED]');
  });
});

describe('invalid plans: thrown errors and problems carry no secret', () => {
  const cases: [string, Plan][] = [
    ['an unknown tool (E201)', { id: 'p', steps: [{ id: 'a', tool: `tool_${SECRET}` }] }],
    ['a reference to an unknown step', { id: 'p', steps: [{ id: 'a', tool: 'echo', args: { value: `$${SECRET}` } }] }],
    ['an unknown field', { id: 'p', steps: [{ id: 'a', tool: 'echo', [SECRET]: 1 } as never] }],
    [
      'a reference to a step that is not a dependency',
      {
        id: 'p',
        steps: [
          { id: `s-${SECRET}`, tool: 'echo' },
          { id: 'b', tool: 'echo', args: { value: { $ref: `s-${SECRET}` } } },
        ],
      },
    ],
    ['a dependency on an unknown step', { id: 'p', steps: [{ id: 'a', tool: 'echo', dependsOn: [`x${SECRET}`] }] }],
    [
      'a duplicate step id',
      {
        id: 'p',
        steps: [
          { id: `d-${SECRET}`, tool: 'echo' },
          { id: `d-${SECRET}`, tool: 'echo' },
        ],
      },
    ],
    [
      'a cycle',
      {
        id: 'p',
        steps: [
          { id: `c-${SECRET}`, tool: 'echo', dependsOn: ['e'] },
          { id: 'e', tool: 'echo', dependsOn: [`c-${SECRET}`] },
        ],
      },
    ],
  ];
  it.each(cases)('%s', (_name, plan) => {
    const { engine } = engineWith();
    // Without a redactor the problems quote the secret: the case is not vacuous.
    expect(JSON.stringify(validatePlan(plan, { tools: createTestTools().registry }).problems)).toContain(SECRET);
    const error = thrownBy(() => engine.run(plan));
    expect(StepwiseError.isInstance(error)).toBe(true);
    const problems = (error as StepwiseError).details?.problems as unknown[];
    expect(problems.length).toBeGreaterThan(0);
    const thrown = JSON.stringify({ ...(error as StepwiseError), message: (error as Error).message });
    expect(thrown).toContain('[REDACTED]');
    expect(thrown).not.toContain(SECRET);
    expect(JSON.stringify(engine.validate(plan).problems)).not.toContain(SECRET);
  });

  it('validatePlan redacts only when given a redactor (its default quotes the plan as written)', () => {
    const plan = { id: 'p', steps: [{ id: 'a', tool: `tool_${SECRET}` }] };
    const { registry } = createTestTools();
    expect(JSON.stringify(validatePlan(plan, { tools: registry }).problems)).toContain(SECRET);
    const redactor = createRedactor({ secrets: [SECRET] });
    expect(JSON.stringify(validatePlan(plan, { tools: registry, redactor }).problems)).not.toContain(SECRET);
  });
});

describe('values nested too deep', () => {
  it.each([5_000, 100_000])('a plan whose args nest %i levels: E202 with a location, never a RangeError', (depth) => {
    const plan = { id: 'p', steps: [{ id: 'a', tool: 'echo', args: { value: nested(depth) } }] } as Plan;
    const validation = validatePlan(plan);
    expect(validation.ok).toBe(false);
    expect(validation.problems).toEqual([
      expect.objectContaining({
        code: 'E202',
        kind: 'too-deep',
        path: expect.stringMatching(/^\/steps\/0\/args\/value(\/a)+$/),
      }),
    ]);
    const { engine } = engineWith();
    const error = thrownBy(() => engine.run(plan));
    expect(StepwiseError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'E202', location: expect.stringMatching(/^\/steps\/0\/args\/value\/a/) });
    expect((error as Error).message).toMatch(/more than 256 levels/);
  });

  it('deep plan metadata is E001; a plan at the limit runs', async () => {
    const deepMetadata = { id: 'p', metadata: nested(300), steps: [{ id: 'a', tool: 'echo' }] } as Plan;
    expect(validatePlan(deepMetadata).problems[0]).toMatchObject({ code: 'E001', kind: 'too-deep' });
    // The plan (1), steps (2), the step (3), args (4), then 252 levels of `a`: 256 in all.
    const atLimit = { id: 'p', steps: [{ id: 'a', tool: 'echo', args: { value: nested(251) } }] } as Plan;
    expect(validatePlan(atLimit).ok).toBe(true);
    const { engine, store } = engineWith();
    const result = await engine.run(atLimit).result;
    expect(result.status).toBe('completed');
    expect(JSON.stringify(await readAll(store, result.runId))).not.toContain(SECRET);
  });

  it('a tool output too deep fails its step with E305; an error with details too deep keeps its code without them; the journal stays whole', async () => {
    const { engine, store } = engineWith();
    const plan: Plan = {
      id: 'p',
      steps: [
        { id: 'output', tool: 'deep_output', args: { depth: 5_000 }, critical: false },
        { id: 'error', tool: 'deep_error', args: { depth: 5_000 }, critical: false },
        { id: 'fine', tool: 'echo', args: { value: 1 } },
      ],
    };
    const result = await engine.run(plan).result;
    const byStep = Object.fromEntries(result.steps.map((step) => [step.stepId, step]));
    expect(byStep.output?.error).toMatchObject({
      code: 'E305',
      location: expect.stringMatching(/^output\/output(\/a)+$/),
    });
    // The tool's own error, without the details no store could walk.
    expect(byStep.error?.error).toMatchObject({
      code: 'E300',
      message: expect.stringContaining('its details were left out: details: objects and arrays nested more than'),
    });
    expect(byStep.error?.error?.details).toBeUndefined();
    expect(byStep.fine?.status).toBe('succeeded');
    const events = await readAll(store, result.runId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_event, index) => index + 1));
    expect(JSON.stringify(events)).not.toContain(SECRET);
  });
});

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
});

describe.skipIf(process.platform !== 'linux')('resume and orphaned process groups', () => {
  it('kills the recorded orphan, leaves a forged record alone, and journals both as process-kill', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });
    child.unref();
    children.push(child);
    const pid = child.pid as number;
    await new Promise((resolve) => setTimeout(resolve, 150));
    const store = new MemoryStore();
    const base = { runId: 'run_o', at: new Date().toISOString() };
    const plan: Plan = { id: 'p', steps: [{ id: 'a', tool: 'echo' }] };
    const journal = [
      { ...base, type: 'run-start', planId: 'p', planDigest: 'd', plan, engine: 'dag' },
      { ...base, type: 'step-start', stepId: 'a', tool: 'echo', attempt: 1, executionId: 'ex_a' },
      {
        ...base,
        type: 'process-start',
        stepId: 'a',
        executionId: 'ex_a',
        ...describeProcess({ pid, processGroup: pid }),
      },
      {
        ...base,
        type: 'process-start',
        stepId: 'a',
        executionId: 'ex_a',
        ...describeProcess({ pid, processGroup: pid }),
        pid: 1,
        processGroup: 1,
      },
    ].map((event, index) => ({ ...event, seq: index + 1 }) as unknown as RunEvent);
    await store.append('run_o', journal);

    const resumed = await reopenRun({ store, runId: 'run_o' });
    await resumed.journal.close();
    const expected = { killed: [pid], left: [{ pid: 1, processGroup: 1, reason: 'invalid' }] };
    expect(resumed.processes).toEqual(expected);
    expect((await readAll(store, 'run_o')).at(-1)).toMatchObject({ type: 'process-kill', seq: 5, ...expected });
  });
});

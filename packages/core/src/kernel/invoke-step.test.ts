import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCodes, ToolError } from '../errors.js';
import type { RunEvent, StepResult } from '../journal/events.js';
import { foldRun } from '../journal/fold-run.js';
import { createRedactor } from '../journal/redact.js';
import { readAll } from '../journal/run-store.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import type { Step } from '../plan/plan-schema.js';
import { startRun } from '../run/run-session.js';
import { MemoryStore } from '../store/memory-store.js';
import { createTestTools, makePlan } from '../testing/fixtures.js';
import { defineTool } from '../tools/define-tool.js';
import type { ApprovalHandler, ApprovalPolicy } from './approval.js';
import { invokeStep, type KernelContext } from './invoke-step.js';

async function harness(
  options: { policy?: ApprovalPolicy; handler?: ApprovalHandler; signal?: AbortSignal; timeoutMs?: number } = {},
) {
  const store = new MemoryStore();
  const { registry, log } = createTestTools();
  registry.register(
    defineTool({
      name: 'bad_output',
      description: 'returns the wrong shape',
      input: z.object({}),
      output: z.object({ ok: z.literal(true) }),
      effect: 'read',
      execute: () => ({ ok: 'yes' }) as never,
    }),
  );
  registry.register(
    defineTool({
      name: 'crash',
      description: 'throws a plain error',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        throw new TypeError('boom');
      },
    }),
  );
  registry.register(
    defineTool({
      name: 'remove',
      description: 'destructive',
      input: z.object({ path: z.string() }),
      effect: 'destructive',
      execute: (input) => ({ removed: input.path }),
    }),
  );
  registry.preconditions.register('always_false', { check: () => ({ ok: false, message: 'nope' }), code: 'E101' });
  registry.preconditions.register('always_true', () => true);
  const plan = makePlan([{ id: 'placeholder', tool: 'echo' }]);
  const journal = await startRun({ store, runId: 'run_kernel', plan, engine: 'test' });
  const context: KernelContext = {
    runId: 'run_kernel',
    journal,
    registry,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.timeoutMs ? { defaultTimeoutMs: options.timeoutMs } : {}),
    approvals: {
      ...(options.policy ? { policy: options.policy } : {}),
      ...(options.handler ? { handler: options.handler } : {}),
    },
  };
  const run = (step: Step, extra: Partial<Parameters<typeof invokeStep>[1]> = {}) =>
    invokeStep(step, { attempt: 1, references: 'literal', ...extra }, context);
  const events = async () => readAll(store, 'run_kernel');
  return { run, events, log, store, context };
}

const types = (events: RunEvent[]) => events.slice(1).map((event) => event.type);

describe('invokeStep', () => {
  it('runs a tool and journals step-start, tool-call, tool-result, step-end', async () => {
    const { run, events, log } = await harness();
    const result = await run({ id: 's', tool: 'echo', args: { value: 42 } });
    expect(result).toMatchObject({ stepId: 's', tool: 'echo', status: 'succeeded', output: { value: 42 }, attempt: 1 });
    expect(result.executionId).toBe(deriveExecutionId('run_kernel', 's', 1));
    expect(log.count('echo')).toBe(1);
    expect(types(await events())).toEqual(['step-start', 'tool-call', 'tool-result', 'step-end']);
  });

  it('fails an unknown tool with E201 without calling anything', async () => {
    const { run, events, log } = await harness();
    const result = await run({ id: 's', tool: 'rm -rf /' });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe(ErrorCodes.TOOL_UNKNOWN);
    expect(log.count()).toBe(0);
    expect(types(await events())).toEqual(['step-start', 'step-end']);
  });

  it('fails bad arguments with E202 and the argument path', async () => {
    const { run, log } = await harness();
    const result = await run({ id: 's', tool: 'note', args: { text: 7 } });
    expect(result.error).toMatchObject({ code: ErrorCodes.ARGUMENTS_INVALID, location: 's/args/text' });
    expect(log.count()).toBe(0);
  });

  it('fails a precondition with its code and never calls the tool', async () => {
    const { run, log } = await harness();
    const passed = await run({ id: 'ok', tool: 'echo', preconditions: [{ kind: 'always_true' }] });
    expect(passed.status).toBe('succeeded');
    const failed = await run({
      id: 's',
      tool: 'echo',
      preconditions: [{ kind: 'always_true' }, { kind: 'always_false' }],
    });
    expect(failed.error).toMatchObject({ code: 'E101', location: 's/preconditions/1' });
    const unknown = await run({ id: 'u', tool: 'echo', preconditions: [{ kind: 'no_such_check' }] });
    expect(unknown.error?.code).toBe(ErrorCodes.PRECONDITION_OTHER);
    expect(log.count()).toBe(1);
  });

  it('denies by policy, by handler, and by the non-interactive fallback — and journals each decision', async () => {
    const policyDenied = await harness({ policy: { effects: { destructive: 'deny' } } });
    const byPolicy = await policyDenied.run({ id: 's', tool: 'remove', args: { path: 'x' } });
    expect(byPolicy.status).toBe('denied');
    expect(byPolicy.error?.code).toBe(ErrorCodes.APPROVAL_DENIED);

    const asked: string[] = [];
    const handled = await harness({
      handler: async (request) => {
        asked.push(`${request.tool}:${request.reason}`);
        return { decision: 'deny', by: 'carol', reason: 'not today' };
      },
    });
    const byHandler = await handled.run({ id: 's', tool: 'note', args: { text: 'x' }, requiresApproval: true });
    expect(byHandler.status).toBe('denied');
    expect(asked).toEqual(['note:step']);
    expect(handled.log.count()).toBe(0);
    const decision = (await handled.events()).find((event) => event.type === 'approval-decision');
    expect(decision).toMatchObject({ decision: 'denied', source: 'handler', by: 'carol', reason: 'not today' });

    const unattended = await harness();
    const byFallback = await unattended.run({ id: 's', tool: 'remove', args: { path: 'x' } });
    expect(byFallback.status).toBe('denied');
    expect(types(await unattended.events())).toEqual([
      'step-start',
      'approval-request',
      'approval-decision',
      'step-end',
    ]);
  });

  it('approves through the handler, and skips when asked to', async () => {
    const approved = await harness({ handler: async () => true });
    expect((await approved.run({ id: 's', tool: 'remove', args: { path: 'x' } })).status).toBe('succeeded');
    const skipped = await harness({ handler: async () => ({ decision: 'skip' }) });
    expect((await skipped.run({ id: 's', tool: 'remove', args: { path: 'x' } })).status).toBe('skipped');
    const auto = await harness({ policy: { effects: { destructive: 'prompt' }, nonInteractive: 'auto' } });
    expect((await auto.run({ id: 's', tool: 'remove', args: { path: 'x' } })).status).toBe('succeeded');
  });

  it('times out a tool that ignores its signal (E306) and returns', async () => {
    const { run, events } = await harness();
    const result = await run({ id: 's', tool: 'hang', timeoutMs: 50 });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe(ErrorCodes.STEP_TIMEOUT);
    expect(result.error?.retryable).toBe(true);
    expect((await events()).find((event) => event.type === 'tool-result')).toMatchObject({ status: 'failed' });
  });

  it('cancels when the run signal aborts (E307)', async () => {
    const controller = new AbortController();
    const { run } = await harness({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user pressed stop')), 20);
    const result = await run({ id: 's', tool: 'sleep', args: { ms: 10_000 } });
    expect(result.status).toBe('cancelled');
    expect(result.error?.code).toBe(ErrorCodes.STEP_CANCELLED);
    expect(result.error?.message).toContain('user pressed stop');
  });

  it('turns thrown errors into failed results, keeping ToolError codes and retryability', async () => {
    const { run } = await harness();
    const plain = await run({ id: 'a', tool: 'crash' });
    expect(plain.error).toMatchObject({ code: ErrorCodes.TOOL_FAILED, message: 'boom', retryable: false });
    const typed = await run({ id: 'b', tool: 'fail', args: { code: 'E301', message: 'gone', retryable: true } });
    expect(typed.error).toMatchObject({ code: 'E301', message: 'gone', retryable: true });
    expect(new ToolError({ message: 'x' }).code).toBe(ErrorCodes.TOOL_FAILED);
  });

  it('fails output that breaks the output schema (E305)', async () => {
    const { run } = await harness();
    const result = await run({ id: 's', tool: 'bad_output' });
    expect(result.error).toMatchObject({ code: ErrorCodes.TOOL_OUTPUT_INVALID, location: 's/output/ok' });
  });

  it("checks a synchronous tool's output against a schema that checks asynchronously, and fails a check that throws", async () => {
    const { run, context, events } = await harness();
    const asyncCheck = z.object({ n: z.number() }).refine(async (value) => value.n > 0, { message: 'not positive' });
    for (const [name, n] of [
      ['positive', 1],
      ['negative', -1],
    ] as const) {
      context.registry.register(
        defineTool({
          name,
          description: 'returns n',
          input: z.object({}),
          output: asyncCheck,
          effect: 'read',
          execute: () => ({ n }),
        }),
      );
    }
    context.registry.register(
      defineTool({
        name: 'check_throws',
        description: 'its output check throws',
        input: z.object({}),
        output: z.object({}).refine(() => {
          throw new RangeError('the check broke');
        }),
        effect: 'read',
        execute: () => ({}),
      }),
    );
    const passed = await run({ id: 'p', tool: 'positive' });
    expect(passed).toMatchObject({ status: 'succeeded', output: { n: 1 } });
    const refused = await run({ id: 'n', tool: 'negative' });
    expect(refused.error).toMatchObject({ code: ErrorCodes.TOOL_OUTPUT_INVALID, location: 'n/output' });
    const broken = await run({ id: 't', tool: 'check_throws' });
    expect(broken.error).toMatchObject({ code: ErrorCodes.TOOL_FAILED, message: 'the check broke' });
    context.registry.register(
      defineTool({
        name: 'async_check_throws',
        description: 'its asynchronous output check rejects',
        input: z.object({}),
        // A Standard Schema of its own: zod leaves a second, unhandled rejection behind when an async refinement throws.
        output: {
          '~standard': {
            version: 1,
            vendor: 'test',
            validate: () => Promise.reject(new RangeError('the async check broke')),
          },
        },
        effect: 'read',
        execute: () => ({}),
      }),
    );
    const brokenLater = await run({ id: 'a', tool: 'async_check_throws' });
    expect(brokenLater.error).toMatchObject({ code: ErrorCodes.TOOL_FAILED, message: 'the async check broke' });
    // Every call still journaled its result and its step's end.
    expect(types(await events()).filter((type) => type === 'tool-result' || type === 'step-end')).toHaveLength(8);
  });

  it('resolves references only when asked, with pointers, and fails unresolved ones (E203)', async () => {
    const { run, log } = await harness();
    const outputs = new Map<string, unknown>([['read', { contents: { version: '1.2.3' } }]]);
    const step: Step = { id: 'w', tool: 'note', args: { text: { $ref: 'read', pointer: '/contents/version' } } };
    const resolved = await run(step, { references: 'resolve', outputs });
    expect(resolved.status).toBe('succeeded');
    expect(log.calls[0]?.args).toEqual({ text: '1.2.3' });
    const shorthand = await run(
      { id: 'x', tool: 'echo', args: { value: '$read/contents', other: '$$5' } },
      {
        references: 'resolve',
        outputs,
      },
    );
    expect(shorthand.output).toEqual({ value: { version: '1.2.3' } });
    expect(log.calls[1]?.args).toEqual({ value: { version: '1.2.3' }, other: '$5' });
    const literal = await run({ id: 'y', tool: 'echo', args: { value: '$read' } });
    expect(literal.output).toEqual({ value: '$read' });
    const missing = await run(
      { id: 'z', tool: 'echo', args: { value: '$read/nope' } },
      { references: 'resolve', outputs },
    );
    expect(missing.error).toMatchObject({ code: ErrorCodes.REFERENCE_UNRESOLVED, location: '/value' });
  });

  it('redacts secrets in args, output and errors before they are journaled or returned', async () => {
    const store = new MemoryStore();
    const { registry } = createTestTools();
    const redactor = createRedactor({ secrets: ['correct-horse-battery'] });
    const journal = await startRun({
      store,
      runId: 'run_secret',
      plan: makePlan([{ id: 'a', tool: 'echo' }]),
      engine: 't',
      redactor,
    });
    const context: KernelContext = { runId: 'run_secret', journal, registry };
    const result: StepResult = await invokeStep(
      { id: 'a', tool: 'echo', args: { value: 'pw correct-horse-battery and AKIAABCDEFGHIJKLMNOP' } },
      { attempt: 1, references: 'literal' },
      context,
    );
    const failed = await invokeStep(
      { id: 'b', tool: 'fail', args: { message: 'bad token sk-abcdefghijklmnopqrstuvwxyz123456' } },
      { attempt: 1, references: 'literal' },
      context,
    );
    const stored = JSON.stringify(await readAll(store, 'run_secret'));
    for (const text of [stored, JSON.stringify(result), JSON.stringify(failed)]) {
      expect(text).not.toContain('correct-horse-battery');
      expect(text).not.toContain('AKIAABCDEFGHIJKLMNOP');
      expect(text).not.toContain('sk-abcdefghijklmnopqrstuvwxyz123456');
    }
    expect(foldRun(await readAll(store, 'run_secret')).steps.get('a')?.status).toBe('succeeded');
  });
});

describe('invokeStep with an already aborted run', () => {
  it('cancels without leaving an unhandled rejection behind', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const controller = new AbortController();
      controller.abort(new Error('stopped before the call'));
      const store = new MemoryStore();
      const { registry } = createTestTools();
      const journal = await startRun({
        store,
        runId: 'run_aborted',
        plan: makePlan([{ id: 'a', tool: 'fail' }]),
        engine: 't',
      });
      const result = await invokeStep(
        { id: 'a', tool: 'fail', args: {} },
        { attempt: 1, references: 'literal' },
        { runId: 'run_aborted', journal, registry, signal: controller.signal },
      );
      expect(result.status).toBe('cancelled');
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('invokeStep durability', () => {
  /** Runs one step of `tool` and records which events the store held while the tool executed. */
  async function storedWhileRunning(idempotent: boolean, slow = false) {
    const store = new MemoryStore();
    const appends: number[][] = [];
    const append = store.append.bind(store);
    store.append = (runId, events, lease) => {
      appends.push(events.map((event) => event.seq));
      return append(runId, events, lease);
    };
    const { registry } = createTestTools();
    let seen: string[] = [];
    registry.register(
      defineTool({
        name: 'probe',
        description: 'reads what the journal made durable so far',
        input: z.object({}),
        effect: 'write',
        idempotent,
        execute: async () => {
          if (slow) await new Promise((resolve) => setTimeout(resolve, 20));
          seen = (await readAll(store, 'run_durable')).map((event) => event.type);
          return { ok: true };
        },
      }),
    );
    const plan = makePlan([{ id: 'p', tool: 'probe' }]);
    const journal = await startRun({ store, runId: 'run_durable', plan, engine: 'test' });
    appends.length = 0;
    const result = await invokeStep(
      plan.steps[0] as Step,
      { attempt: 1, references: 'literal' },
      {
        runId: 'run_durable',
        journal,
        registry,
      },
    );
    expect(result.status).toBe('succeeded');
    return { seen, appends };
  }

  it('makes a non-idempotent call durable before the tool runs (two commits)', async () => {
    const { seen, appends } = await storedWhileRunning(false);
    expect(seen).toEqual(['run-start', 'step-start', 'tool-call']);
    expect(appends).toHaveLength(2);
  });

  it('commits an idempotent call with its result: the tool may run again after a crash (one commit)', async () => {
    const { seen, appends } = await storedWhileRunning(true);
    expect(seen).toEqual(['run-start']);
    expect(appends).toEqual([[2, 3, 4, 5]]);
  });

  it('still commits a slow idempotent call while the tool runs, so listeners see the step start', async () => {
    const { seen, appends } = await storedWhileRunning(true, true);
    expect(seen).toEqual(['run-start', 'step-start', 'tool-call']);
    expect(appends).toEqual([
      [2, 3],
      [4, 5],
    ]);
  });
});

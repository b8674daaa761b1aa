import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, MemoryStore, readAll, StepwiseError } from '@stepwise/core';
import { attemptHistory } from '@stepwise/dashboard/report';
import { scriptedModel } from '@stepwise/engine-agentic/testing';
import { createSqliteStore } from '@stepwise/store-sqlite';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { resumeSolve, type SolveEvent, solve } from '../src/index.js';

const example = fileURLToPath(new URL('../../../examples/code-agent/', import.meta.url));
const project = path.join(example, 'project');
const { scriptedFixer, PLAN } = (await import(path.join(example, 'scripted-fixer.mjs'))) as {
  scriptedFixer: (request: { body: unknown }) => unknown;
  PLAN: { id: string; goal: string; steps: { id: string; description: string }[] };
};

/** Every file under `root` (node_modules aside) with its exact bytes. */
function files(root: string, relative = ''): Record<string, string> {
  const found: Record<string, string> = {};
  for (const name of readdirSync(path.join(root, relative)).sort()) {
    const child = relative ? `${relative}/${name}` : name;
    if (statSync(path.join(root, child)).isDirectory()) Object.assign(found, files(root, child));
    else found[child] = readFileSync(path.join(root, child)).toString('base64');
  }
  return found;
}

/** The example's script as an in-process ChatModel (OpenAI wire format turned back into requests). */
function exampleModel() {
  return scriptedModel(({ request }) => {
    const body = {
      tools: request.tools.map((tool) => ({ function: { name: tool.name } })),
      messages: request.messages.map((message) => ({ role: message.role, content: message.content })),
    };
    return scriptedFixer({ body }) as never;
  });
}
describe('solve', () => {
  const scratch: string[] = [];
  const workspace = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'solve-'));
    scratch.push(dir);
    cpSync(project, dir, { recursive: true });
    return dir;
  };
  afterEach(() => {
    for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('rolls the wrong first edit back byte for byte, feeds the failing tests back, and keeps the right one', async () => {
    const dir = workspace();
    const original = files(dir);
    const model = exampleModel();
    const store = new MemoryStore();
    const afterAttempt: Record<string, string>[] = [];
    const progress: SolveEvent[] = [];
    const result = await solve({
      task: 'Make the tests pass.',
      workspace: dir,
      validate: ['node', '--test'],
      model,
      store,
      onProgress(event) {
        progress.push(event);
        if (event.type === 'attempt-end') afterAttempt.push(files(dir));
      },
    });

    expect(result.status).toBe('solved');
    expect(result.plan.steps.map((step) => step.id)).toEqual(['plan', 'fix-discount']);
    expect(result.steps).toEqual([{ stepId: 'fix-discount', status: 'succeeded', attempts: 2 }]);
    const [first, second] = result.attempts;
    expect(first).toMatchObject({ attempt: 1, status: 'succeeded', rolledBack: true });
    expect(first?.validation?.passed).toBe(false);
    expect(first?.validation?.exitCode).toBe(1);
    expect(first?.validation?.failingTests.map((test) => test.name)).toEqual([
      'discounts > no discount keeps the total',
      'discounts > half price',
    ]);
    expect(first?.changes.modified).toEqual(['src/cart.js']);
    // After the failed attempt the workspace is exactly the original, byte for byte.
    expect(afterAttempt[0]).toEqual(original);
    expect(second).toMatchObject({ attempt: 2, status: 'succeeded', rolledBack: false });
    expect(second?.validation?.passed).toBe(true);
    expect(readFileSync(path.join(dir, 'src/cart.js'), 'utf8')).toContain('return total * (1 - percent / 100);');
    expect(readFileSync(path.join(dir, 'test/cart.test.js'))).toEqual(
      readFileSync(path.join(project, 'test/cart.test.js')),
    );

    // The second attempt's prompt carried the failing test names and their assertion output.
    const retryPrompt = model.requests.find((request) =>
      request.messages.some((message) => message.content.includes('failed and was rolled back')),
    );
    const opening = retryPrompt?.messages.find((message) => message.role === 'user')?.content ?? '';
    expect(opening).toContain('discounts > half price');
    expect(opening).toContain('29.4 !== 15');
    expect(opening).toContain('`node --test` exited with code 1');

    // One run in the store: the code agent's own, on the scheduler (no child runs).
    const runs = await store.listRuns();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ runId: result.runId, engine: 'solve', status: 'completed' });
    const journaled = await readAll(store, result.runId);
    // The planning step's model calls are journaled in the run, one per planner request, before any attempt.
    const plannerRequests = model.requests.filter((request) =>
      request.tools.some((tool) => tool.name === 'submit_plan'),
    );
    const plannerCalls = journaled.filter(
      (event) => event.type === 'model-call' && (event.request as { purpose?: string }).purpose === 'plan',
    );
    expect(plannerRequests.length).toBeGreaterThan(0);
    expect(plannerCalls).toHaveLength(plannerRequests.length);
    const firstCheckpoint = journaled.findIndex((event) => event.type === 'workspace-checkpoint');
    expect(journaled.indexOf(plannerCalls.at(-1) as never)).toBeLessThan(firstCheckpoint);
    const kinds = journaled
      .filter((event) =>
        ['workspace-checkpoint', 'validation-end', 'workspace-rollback', 'attempt-end'].includes(event.type),
      )
      .map((event) => `${event.type}:${(event as { attempt?: number }).attempt}`);
    expect(kinds).toEqual([
      'workspace-checkpoint:1',
      'validation-end:1',
      'workspace-rollback:1',
      'attempt-end:1',
      'workspace-checkpoint:2',
      'validation-end:2',
      'attempt-end:2',
    ]);
    // Steps start and end through the scheduler: the planning step, then two attempts of the fix.
    expect(
      journaled
        .filter((event) => event.type === 'step-start')
        .map(
          (event) => `${event.type === 'step-start' && event.stepId}:${event.type === 'step-start' && event.attempt}`,
        ),
    ).toEqual(['plan:1', 'fix-discount:1', 'fix-discount:2']);
    expect(journaled.filter((event) => event.type === 'step-retry')).toHaveLength(1);
    // One adjustment per finished step: the planned steps, then the validated fix.
    expect(
      journaled
        .filter((event) => event.type === 'adjust-decision')
        .map((event) => event.type === 'adjust-decision' && event.decision),
    ).toEqual(['revise', 'continue']);
    const validated = journaled.find((event) => event.type === 'validation-end');
    expect(validated).toMatchObject({ exitCode: 1, passed: false, command: ['node', '--test'], name: 'test' });
    expect(validated?.type === 'validation-end' && validated.failingTests.map((test) => test.name)).toEqual([
      'discounts > no discount keeps the total',
      'discounts > half price',
    ]);
    expect(journaled.find((event) => event.type === 'workspace-rollback')).toMatchObject({
      restored: ['src/cart.js'],
      removed: [],
    });
    // The validation command is a tool call of the attempt, through the kernel.
    const validationResult = journaled.find(
      (event) => event.type === 'tool-result' && event.tool === 'run_command' && event.stepId === 'fix-discount',
    );
    expect(validationResult).toMatchObject({ status: 'failed', error: { code: 'E304' } });
    // The checkpoints saved on disk are gone once their attempts are settled.
    expect(readdirSync(path.join(dir, '.stepwise', 'checkpoints'))).toEqual([]);
    expect(progress.map((event) => event.type)).toEqual([
      'plan-ready',
      'attempt-start',
      'attempt-end',
      'attempt-start',
      'attempt-end',
    ]);
    expect(result.summary).toContain('fix-discount attempt 1');
    expect(result.summary).toContain('rolled back');
  }, 120_000);

  it('gives up after maxAttempts with the workspace as it was', async () => {
    const dir = workspace();
    const original = files(dir);
    const wrongEveryTime = scriptedModel(({ request }) => {
      const turn = request.messages.filter((message) => message.role === 'assistant').length;
      if (turn === 0) {
        return {
          toolCalls: [
            {
              name: 'file_edit',
              arguments: { path: 'src/cart.js', edits: [{ search: 'return total - percent;', replace: 'return 0;' }] },
            },
          ],
        };
      }
      if (turn === 1)
        return { toolCalls: [{ name: 'file_create', arguments: { path: 'scratch.txt', contents: 'x' } }] };
      return { toolCalls: [{ name: 'complete_step', arguments: { summary: 'done' } }] };
    });
    const result = await solve({
      task: 'Make the tests pass.',
      workspace: dir,
      validate: ['node', '--test'],
      model: wrongEveryTime,
      plan: PLAN,
      maxAttempts: 2,
      maxReplans: 0,
    });
    expect(result.status).toBe('failed');
    expect(result.failedStepId).toBe('fix-discount');
    expect(result.attempts.map((attempt) => attempt.rolledBack)).toEqual([true, true]);
    expect(result.attempts[0]?.changes).toMatchObject({ created: ['scratch.txt'], modified: ['src/cart.js'] });
    expect(files(dir)).toEqual(original);
  }, 120_000);

  it('revises the rest of the plan when a step uses all its attempts, keeping solved steps', async () => {
    const dir = workspace();
    const fix = { id: 'fix', description: 'Fix applyDiscount.' };
    const twoSteps = {
      id: 'two-steps',
      goal: 'Make the tests pass.',
      steps: [fix, { id: 'guess', description: 'Change the rounding.', dependsOn: ['fix'] }],
    };
    const replanned: string[] = [];
    const model = scriptedModel(({ request }) => {
      const opening = request.messages.find((message) => message.role === 'user')?.content ?? '';
      if (request.tools.some((tool) => tool.name === 'submit_plan')) {
        replanned.push(opening);
        const note = { id: 'note', description: 'Write NOTES.md.', dependsOn: ['fix'] };
        return { toolCalls: [{ name: 'submit_plan', arguments: { ...twoSteps, steps: [fix, note] } }] };
      }
      const turn = request.messages.filter((message) => message.role === 'assistant').length;
      const edit = (search: string, replace: string) => ({
        toolCalls: [{ name: 'file_edit', arguments: { path: 'src/cart.js', edits: [{ search, replace }] } }],
      });
      if (turn > 0) return { toolCalls: [{ name: 'complete_step', arguments: { summary: 'done' } }] };
      if (opening.includes('Write NOTES.md')) {
        return { toolCalls: [{ name: 'file_create', arguments: { path: 'NOTES.md', contents: 'notes' } }] };
      }
      if (opening.includes('Change the rounding')) return edit('* 100) / 100', '* 100) / 10');
      return edit('return total - percent;', 'return total * (1 - percent / 100);');
    });
    const progress: SolveEvent[] = [];
    const store = new MemoryStore();
    const result = await solve({
      task: 'Make the tests pass.',
      workspace: dir,
      validate: ['node', '--test'],
      model,
      store,
      plan: twoSteps,
      maxAttempts: 1,
      onProgress: (event) => progress.push(event),
    });

    // The replaced step stays failed in the journal: the run is partial, every planned step accounted for.
    expect(result.status).toBe('partial');
    expect(result.steps.map((step) => `${step.stepId}:${step.status}`)).toEqual([
      'fix:succeeded',
      'guess:failed',
      'note:succeeded',
    ]);
    expect(result.attempts.map((attempt) => `${attempt.stepId}:${attempt.validation?.passed}`)).toEqual([
      'fix:true',
      'guess:false',
      'note:true',
    ]);
    expect(result.revisions).toHaveLength(1);
    expect(
      result.revisions[0]?.diff.map((change) => `${change.kind}:${'stepId' in change ? change.stepId : ''}`),
    ).toEqual(['step-added:note']);
    expect(result.plan.steps.map((step) => step.id)).toEqual(['fix', 'guess', 'note']);
    expect(replanned[0]).toContain('step "guess" failed 1 time');
    expect(replanned[0]).toContain('may not change: fix');
    // The solved step was not run again after the revision; the guess was rolled back.
    expect(readFileSync(path.join(dir, 'src/cart.js'), 'utf8')).toContain('* 100) / 100');
    expect(readFileSync(path.join(dir, 'NOTES.md'), 'utf8')).toBe('notes');
    expect(progress.map((event) => event.type)).toContain('plan-revised');
    // The replan's model call is journaled in the code agent's run, before the revision it produced.
    const journaled = await readAll(store, result.runId);
    const replanCall = journaled.findIndex(
      (event) => event.type === 'model-call' && (event.request as { purpose?: string }).purpose === 'plan',
    );
    expect(replanCall).toBeGreaterThan(0);
    expect(replanCall).toBeLessThan(journaled.findIndex((event) => event.type === 'plan-revise'));
  }, 120_000);

  it('counts every attempt once across a replan: the attempts view, the README join and the result', async () => {
    const dir = workspace();
    const original = files(dir);
    // Never fixes the bug; the replan gives the step a new id (a started step cannot change).
    const model = scriptedModel(({ request }) => {
      if (request.tools.some((tool) => tool.name === 'submit_plan')) {
        const retry = { id: 'fix-discount-again', description: 'Fix applyDiscount another way.' };
        return { toolCalls: [{ name: 'submit_plan', arguments: { ...PLAN, steps: [...PLAN.steps, retry] } }] };
      }
      const turn = request.messages.filter((message) => message.role === 'assistant').length;
      if (turn === 0) {
        return {
          toolCalls: [
            {
              name: 'file_edit',
              arguments: { path: 'src/cart.js', edits: [{ search: 'return total - percent;', replace: 'return 0;' }] },
            },
          ],
        };
      }
      return { toolCalls: [{ name: 'complete_step', arguments: { summary: 'done' } }] };
    });
    const database = path.join(mkdtempSync(path.join(tmpdir(), 'solve-db-')), 'stepwise.db');
    scratch.push(path.dirname(database));
    const store = createSqliteStore({ path: database });
    const result = await solve({
      task: 'Make the tests pass.',
      workspace: dir,
      validate: ['node', '--test'],
      model,
      store,
      plan: PLAN,
      maxAttempts: 2,
    }).finally(() => store.close());
    expect(result.status).toBe('failed');
    expect(result.attempts.map((attempt) => `${attempt.stepId}:${attempt.attempt}:${attempt.revision}`)).toEqual([
      'fix-discount:1:0',
      'fix-discount:2:0',
      'fix-discount-again:1:1',
      'fix-discount-again:2:1',
    ]);
    expect(result.steps.map((step) => `${step.stepId}:${step.status}:${step.attempts}`)).toEqual([
      'fix-discount:failed:2',
      'fix-discount-again:failed:2',
    ]);
    expect(result.summary).toContain('step fix-discount: failed after 2 attempts');
    expect(files(dir)).toEqual(original);
    const sqlite = new Database(database, { readonly: true });
    try {
      const attempts = sqlite
        .prepare('select step_id, attempt from attempts where run_id = ? order by seq')
        .all(result.runId) as { step_id: string; attempt: number }[];
      expect(attempts.map((row) => `${row.step_id}:${row.attempt}`)).toEqual([
        'fix-discount:1',
        'fix-discount:2',
        'fix-discount-again:1',
        'fix-discount-again:2',
      ]);
      // The store-sqlite README's "What did the code agent try?" join: one row per attempt.
      const joined = sqlite
        .prepare(
          `select a.step_id, a.attempt, a.status, a.rolled_back, v.command, v.exit_code, v.passed,
                  v.failing_count, v.failing_tests, rb.restored, rb.removed
           from attempts a
           join validations v on v.run_id = a.run_id and v.step_id = a.step_id and v.attempt = a.attempt
           left join rollbacks rb on rb.run_id = a.run_id and rb.step_id = a.step_id and rb.attempt = a.attempt
           where a.run_id = :run_id
           order by a.seq`,
        )
        .all({ run_id: result.runId });
      expect(joined).toHaveLength(4);
    } finally {
      sqlite.close();
    }
  }, 120_000);

  it('journals one adjustment per finished step and ends partial when one of three independent steps cannot be fixed', async () => {
    const dir = workspace();
    const threeSteps = {
      id: 'three-steps',
      goal: 'Make the tests pass and take notes.',
      steps: [
        { id: 'fix', description: 'Fix applyDiscount.' },
        { id: 'break', description: 'Make the impossible change.' },
        { id: 'notes', description: 'Write NOTES.md.' },
      ],
    };
    const model = scriptedModel(({ request }) => {
      const opening = request.messages.find((message) => message.role === 'user')?.content ?? '';
      const turn = request.messages.filter((message) => message.role === 'assistant').length;
      if (turn > 0) return { toolCalls: [{ name: 'complete_step', arguments: { summary: 'done' } }] };
      if (opening.includes('Write NOTES.md')) {
        return { toolCalls: [{ name: 'file_create', arguments: { path: 'NOTES.md', contents: 'notes' } }] };
      }
      if (opening.includes('impossible')) {
        const failing =
          "import test from 'node:test';\nimport assert from 'node:assert';\ntest('impossible', () => assert.equal(1, 2));\n";
        return {
          toolCalls: [{ name: 'file_create', arguments: { path: 'test/impossible.test.js', contents: failing } }],
        };
      }
      const replace = 'return total * (1 - percent / 100);';
      return {
        toolCalls: [
          {
            name: 'file_edit',
            arguments: { path: 'src/cart.js', edits: [{ search: 'return total - percent;', replace }] },
          },
        ],
      };
    });
    const store = new MemoryStore();
    const result = await solve({
      task: 'Make the tests pass and take notes.',
      workspace: dir,
      validate: { test: ['node', '--test'] },
      model,
      store,
      plan: threeSteps,
      maxAttempts: 1,
      maxReplans: 0,
    });
    expect(result.status).toBe('partial');
    expect(result.runStatus).toBe('partial');
    expect(result.steps.map((step) => `${step.stepId}:${step.status}`)).toEqual([
      'fix:succeeded',
      'break:failed',
      'notes:succeeded',
    ]);
    expect(result.summary).toContain('Partly solved');
    expect(result.summary).toContain('step break: failed after 1 attempt');
    const decisions = (await readAll(store, result.runId)).filter((event) => event.type === 'adjust-decision');
    expect(
      decisions.map((event) => event.type === 'adjust-decision' && `${event.stepId}:${event.status}:${event.decision}`),
    ).toEqual(['fix:succeeded:continue', 'break:failed:continue', 'notes:succeeded:continue']);
    expect(readFileSync(path.join(dir, 'NOTES.md'), 'utf8')).toBe('notes');
    expect(readFileSync(path.join(dir, 'src/cart.js'), 'utf8')).toContain('(1 - percent / 100)');
    // The failed step's new test file was rolled back.
    expect(readdirSync(path.join(dir, 'test'))).toEqual(['cart.test.js']);
  }, 120_000);

  it('journals the planner calls when planning fails', async () => {
    const dir = workspace();
    const model = scriptedModel(() => ({ text: 'I would rather not plan.' }));
    const store = new MemoryStore();
    const result = await solve({
      task: 'Make the tests pass.',
      workspace: dir,
      validate: ['node', '--test'],
      model,
      store,
      maxRepairs: 1,
    });
    expect(result.status).toBe('failed');
    expect(result.runStatus).toBe('failed');
    const journaled = await readAll(store, result.runId);
    const calls = journaled.filter((event) => event.type === 'model-call');
    expect(calls).toHaveLength(2);
    expect(model.calls).toBe(2);
    const planned = journaled.find((event) => event.type === 'step-end' && event.stepId === 'plan');
    expect(planned?.type === 'step-end' && planned.result.error?.code).toBe('E408');
  }, 60_000);

  it('continues an ended run with retry: the next attempt gets the journaled failure', async () => {
    const dir = workspace();
    const store = new MemoryStore();
    const model = exampleModel();
    const first = await solve({
      task: 'Make the tests pass.',
      workspace: dir,
      validate: ['node', '--test'],
      model,
      store,
      plan: PLAN,
      maxAttempts: 1,
      maxReplans: 0,
    });
    expect(first.status).toBe('failed');
    expect(first.runStatus).toBe('partial');
    const continued = await resumeSolve({
      runId: first.runId,
      store,
      workspace: dir,
      model,
      retry: ['fix-discount'],
      by: 'test',
    });
    expect(continued.status).toBe('solved');
    expect(continued.runId).toBe(first.runId);
    expect(continued.attempts.map((attempt) => `${attempt.attempt}:${attempt.rolledBack}`)).toEqual([
      '1:true',
      '2:false',
    ]);
    expect(readFileSync(path.join(dir, 'src/cart.js'), 'utf8')).toContain('(1 - percent / 100)');
  }, 120_000);

  it("asks the model after each validated step with adjust: 'model', and carries out its revision", async () => {
    const dir = workspace();
    const twoSteps = {
      id: 'two-steps',
      goal: 'Fix and take notes.',
      steps: [
        { id: 'fix', description: 'Fix applyDiscount.' },
        { id: 'notes', description: 'Write NOTES.md.', dependsOn: ['fix'] },
      ],
    };
    const model = scriptedModel(({ request }) => {
      if (request.tools.some((tool) => tool.name === 'adjust_plan')) {
        const edits = [{ op: 'edit', stepId: 'notes', changes: { description: 'Write NOTES.md saying "fixed".' } }];
        return {
          toolCalls: [{ name: 'adjust_plan', arguments: { action: 'revise', reason: 'say what was done', edits } }],
        };
      }
      const opening = request.messages.find((message) => message.role === 'user')?.content ?? '';
      const turn = request.messages.filter((message) => message.role === 'assistant').length;
      if (turn > 0) return { toolCalls: [{ name: 'complete_step', arguments: { summary: 'done' } }] };
      if (opening.includes('Write NOTES.md')) {
        const contents = opening.includes('saying "fixed"') ? 'fixed' : 'notes';
        return { toolCalls: [{ name: 'file_create', arguments: { path: 'NOTES.md', contents } }] };
      }
      const edits = [{ search: 'return total - percent;', replace: 'return total * (1 - percent / 100);' }];
      return { toolCalls: [{ name: 'file_edit', arguments: { path: 'src/cart.js', edits } }] };
    });
    const store = new MemoryStore();
    const result = await solve({
      task: 'Fix and take notes.',
      workspace: dir,
      validate: ['node', '--test'],
      model,
      store,
      plan: twoSteps,
      adjust: 'model',
    });
    expect(result.status).toBe('solved');
    const journaled = await readAll(store, result.runId);
    expect(
      journaled.flatMap((event) => (event.type === 'adjust-decision' ? [`${event.stepId}:${event.decision}`] : [])),
    ).toEqual(['fix:revise', 'notes:continue']);
    expect(readFileSync(path.join(dir, 'NOTES.md'), 'utf8')).toBe('fixed');
  }, 120_000);

  it('runs named validation commands: an optional one that fails does not fail the attempt', async () => {
    const dir = workspace();
    const store = new MemoryStore();
    const result = await solve({
      task: 'Make the tests pass.',
      workspace: dir,
      validate: { test: ['node', '--test'], lint: { command: ['node', 'no-such-linter.js'], optional: true } },
      model: exampleModel(),
      store,
      plan: PLAN,
    });
    expect(result.status).toBe('solved');
    expect(
      result.attempts.map((attempt) =>
        attempt.validations.map((validation) => `${validation.name}:${validation.passed}`).join(','),
      ),
    ).toEqual(['test:false,lint:false', 'test:true,lint:false']);
    // `stepwise show` and the report show the validation that decided each attempt.
    const shown = attemptHistory(await readAll(store, result.runId));
    expect(
      shown.map((entry) => `${entry.attempt}:${entry.validation?.command.join(' ')}:${entry.validation?.passed}`),
    ).toEqual(['1:node --test:false', '2:node --test:true']);
  }, 120_000);

  it('refuses bad options with typed errors before touching anything', async () => {
    const dir = workspace();
    const model = scriptedModel([]);
    for (const [options, location] of [
      [{ validate: [] }, 'validate'],
      [{ validate: ['node', ''] }, 'validate'],
      [{ validate: ['node'], maxAttempts: 0 }, 'maxAttempts'],
      [{ validate: ['node'], task: ' ' }, 'task'],
    ] as const) {
      const error = await solve({ task: 'x', workspace: dir, model, ...options } as never).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(StepwiseError.isInstance(error) && error.code).toBe(ErrorCodes.CONFIG_INVALID);
      expect((error as StepwiseError).location).toBe(location);
    }
    expect(model.calls).toBe(0);
  });
});

import { approvePlan, type Plan, type RunHandle, readAll, respond } from '@stepwise/core';
import { type ApprovalResponseEvent, foldRun, type RunContinueEvent, type RunResumeEvent } from '@stepwise/core/store';
import { blocked, complete, scriptedModel } from '@stepwise/engine-agentic/testing';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';
import { eventually, type Harness, startHarness } from './dashboard-harness.js';
import { openRunPage, runElsewhere, shapeByStep, stepStatuses } from './page-helpers.js';

const VIEWPORT = { width: 1400, height: 1000 };

/** Each run is acted on twice: from the page, and with the core calls `stepwise respond` / `resume` make. */
describe.skipIf(!chromiumAvailable)('actions from the page change the run as the CLI would (SQLite)', () => {
  let harness: Harness;
  beforeAll(async () => {
    // Turn by turn: blocked until the person's answer is the model's latest message, then done.
    const model = scriptedModel(({ request }) => {
      const latest = String(request.messages.at(-1)?.content ?? '');
      return latest.includes('use main') ? complete(`told: ${latest}`) : blocked('which branch should I use?');
    });
    harness = await startHarness({ model });
  });
  afterAll(async () => {
    await harness?.close();
  });

  const notesPlan: Plan = {
    id: 'notes',
    goal: 'Write the release note',
    steps: [
      { id: 'read', tool: 'sleep_ms', args: { ms: 5 } },
      { id: 'write', tool: 'note_write', args: { text: 'version 1.2' }, dependsOn: ['read'] },
    ],
  };

  async function waitingTwins(plan: Plan, engine = harness.engine) {
    const viaPage = await engine.run(plan).result;
    const viaCli = await engine.run(plan).result;
    expect([viaPage.status, viaCli.status]).toEqual(['waiting', 'waiting']);
    return { viaPage: viaPage.runId, viaCli: viaCli.runId };
  }

  async function notice(page: Page): Promise<string> {
    await page.waitForSelector('#notice:not(:empty)');
    return (await page.locator('#notice').textContent()) ?? '';
  }

  for (const decision of ['approve', 'deny'] as const) {
    it(`${decision === 'approve' ? 'approves' : 'denies'} a pending request: answered by the person, the run resumed`, async () => {
      const { viaPage, viaCli } = await waitingTwins(notesPlan);
      await withChromiumPage(VIEWPORT, async (page) => {
        await openRunPage(page, harness, viaPage);
        const card = page.locator('.pending-request[data-step-id="write"]');
        expect(await card.locator('pre').textContent()).toContain('version 1.2');
        await card.getByRole('button', { name: decision === 'approve' ? 'Approve' : 'Deny' }).click();
        expect(await notice(page)).toBe(`${decision} journaled; the run goes on`);
        await page.waitForSelector('body:not([data-status="waiting"]):not([data-status="running"])');
        expect(await page.locator('.pending-request').count()).toBe(0);
      });
      await respond(harness.store, viaCli, { stepId: 'write', decision, by: 'alice' });
      await harness.engine.resume(viaCli).result;
      expect(await shapeByStep(harness.store, viaPage)).toEqual(await shapeByStep(harness.store, viaCli));
      expect(await stepStatuses(harness.store, viaPage)).toEqual({
        read: 'succeeded',
        write: decision === 'approve' ? 'succeeded' : 'denied',
      });
      const events = await readAll(harness.store, viaPage);
      const answer = events.find((event): event is ApprovalResponseEvent => event.type === 'approval-response');
      expect(answer).toMatchObject({ stepId: 'write', decision, by: 'alice' });
    });
  }

  it("answers a goal step's question: the model reads the answer and the step completes", async () => {
    const plan: Plan = { id: 'ask', goal: 'Pick a branch', steps: [{ id: 'pick', description: 'Pick the branch' }] };
    const { viaPage, viaCli } = await waitingTwins(plan, harness.engines.agentic);
    await withChromiumPage(VIEWPORT, async (page) => {
      await openRunPage(page, harness, viaPage);
      const card = page.locator('.pending-request[data-step-id="pick"]');
      expect(await card.textContent()).toContain('which branch should I use?');
      await card.locator('textarea').fill('use main');
      await card.getByRole('button', { name: 'Answer' }).click();
      expect(await notice(page)).toBe('answer journaled; the run goes on');
      await page.waitForSelector('body[data-status="completed"]');
    });
    await respond(harness.store, viaCli, { stepId: 'pick', answer: 'use main', by: 'alice' });
    await harness.engines.agentic?.resume(viaCli).result;
    expect(await shapeByStep(harness.store, viaPage)).toEqual(await shapeByStep(harness.store, viaCli));
    const run = foldRun(await readAll(harness.store, viaPage));
    expect(run.steps.get('pick')?.result?.output).toMatchObject({ summary: expect.stringContaining('use main') });
  });

  it('retries one failed step and skips another: the run continues as `stepwise resume --retry a --skip b`', async () => {
    const plan: Plan = {
      id: 'flaky',
      goal: 'Build with flaky steps',
      steps: [
        { id: 'a', tool: 'flaky', args: { key: 'a' }, critical: false },
        { id: 'b', tool: 'flaky', args: { key: 'b' }, critical: false },
        { id: 'after-b', tool: 'sleep_ms', args: { ms: 1 }, dependsOn: ['b'] },
        { id: 'c', tool: 'sleep_ms', args: { ms: 1 } },
      ],
    };
    harness.failing.add('a');
    harness.failing.add('b');
    const first = await harness.engine.run(plan).result;
    const second = await harness.engine.run(plan).result;
    expect(first.status).toBe('partial');
    expect(await stepStatuses(harness.store, first.runId)).toMatchObject({
      a: 'failed',
      b: 'failed',
      'after-b': 'skipped',
    });
    harness.failing.delete('a');
    await withChromiumPage(VIEWPORT, async (page) => {
      await openRunPage(page, harness, first.runId);
      const table = page.locator('.continue-run');
      await table.locator('tr[data-step-id="a"] input[value="retry"]').check();
      await table.locator('tr[data-step-id="b"] input[value="skip"]').check();
      await table.getByRole('button', { name: 'Continue run' }).click();
      expect(await notice(page)).toBe('the run goes on');
      await page.waitForSelector('#dag .node.status-succeeded[data-step-id="after-b"]');
      await page.waitForSelector('#dag .node.status-succeeded[data-step-id="a"]');
    });
    await harness.engine.resume(second.runId, { retry: ['a'], skip: ['b'], by: 'alice' }).result;
    await eventually(async () => (await harness.store.getRun(first.runId))?.status !== 'running');
    expect(await shapeByStep(harness.store, first.runId)).toEqual(await shapeByStep(harness.store, second.runId));
    expect(await stepStatuses(harness.store, first.runId)).toEqual({
      a: 'succeeded',
      b: 'skipped',
      'after-b': 'succeeded',
      c: 'succeeded',
    });
    const events = await readAll(harness.store, first.runId);
    const continued = events.find((event): event is RunContinueEvent => event.type === 'run-continue');
    expect(continued).toMatchObject({ retry: ['a'], skip: ['b'], by: 'alice' });
  });

  it('cancels a run going on in this process from the page, as its handle would', async () => {
    const plan: Plan = {
      id: 'forever',
      goal: 'Wait until cancelled',
      steps: [{ id: 'wait', tool: 'wait_for_abort', args: {} }],
    };
    const tracked: RunHandle = harness.server.dashboard.track(harness.engine.run(plan));
    await eventually(async () => (await harness.store.getRun(tracked.runId))?.stepCounts.running === 1);
    await withChromiumPage(VIEWPORT, async (page) => {
      await openRunPage(page, harness, tracked.runId);
      await page.getByRole('button', { name: 'Cancel run' }).click();
      expect(await notice(page)).toBe('the run was cancelled');
      await page.waitForSelector('body[data-status="cancelled"]');
    });
    expect((await tracked.result).status).toBe('cancelled');
    const wait = foldRun(await readAll(harness.store, tracked.runId)).steps.get('wait');
    expect(wait?.result?.error?.message).toContain('alice asked to cancel the run: from the dashboard');
  });

  it('cancels a run of another process from the page: that process ends it, and the journal names the person', async () => {
    const elsewhere = runElsewhere(harness.database, 3, 200, 'stepwise', { STEPWISE_TEST_LEASE_TTL_MS: '900' });
    try {
      const runId = await elsewhere.runId;
      await eventually(async () => (await harness.store.getRun(runId))?.stepCounts.running === 1);
      await withChromiumPage(VIEWPORT, async (page) => {
        await openRunPage(page, harness, runId);
        await page.getByRole('button', { name: 'Cancel run' }).click();
        expect(await notice(page)).toBe(
          'cancel requested; the process running the run cancels it at its next lease renewal',
        );
        // Renewed every 300 ms in that process: the page follows the store to the end.
        await page.waitForSelector('body[data-status="cancelled"]', { timeout: 15_000 });
      });
      expect(await elsewhere.status()).toBe('cancelled');
      const end = (await readAll(harness.store, runId)).at(-1);
      expect(end).toMatchObject({ type: 'run-end', status: 'cancelled', by: 'alice', reason: 'from the dashboard' });
    } finally {
      elsewhere.child.kill('SIGKILL');
    }
  });

  it('cancels a waiting run no process holds: the page ends it at once', async () => {
    const waiting = await harness.engine.run(notesPlan).result;
    expect(waiting.status).toBe('waiting');
    await withChromiumPage(VIEWPORT, async (page) => {
      await openRunPage(page, harness, waiting.runId);
      await page.getByRole('button', { name: 'Cancel run' }).click();
      expect(await notice(page)).toBe('the run was cancelled');
      await page.waitForSelector('body[data-status="cancelled"]');
      expect(await page.locator('.pending-request').count()).toBe(0);
    });
    expect((await readAll(harness.store, waiting.runId)).at(-1)).toMatchObject({ status: 'cancelled', by: 'alice' });
  });

  it('approves the revised plan of a strict run: the run resumes with an authorization by the person', async () => {
    const plan: Plan = {
      id: 'strict',
      goal: 'Deploy in order',
      steps: [
        { id: 'one', tool: 'sleep_ms', args: { ms: 1500 } },
        { id: 'two', tool: 'sleep_ms', args: { ms: 1 } },
      ],
    };
    const strict = harness.engines.sequential as unknown as {
      run(plan: Plan, options: object): RunHandle & { revise(request: object): Promise<{ digest: string }> };
      resume: (runId: string, options?: object) => RunHandle;
    };
    async function revisedWithoutApproval() {
      const handle = strict.run(plan, { authorization: approvePlan(plan, { by: 'alice' }) });
      await eventually(async () => (await harness.store.getRun(handle.runId))?.stepCounts.running === 1);
      const revision = await handle.revise({
        edits: [{ op: 'add', step: { id: 'extra', tool: 'sleep_ms', args: { ms: 1 } } }],
        by: 'bob',
      });
      expect((await handle.result).status).toBe('waiting');
      return { runId: handle.runId, digest: revision.digest };
    }
    const viaPage = await revisedWithoutApproval();
    const viaCli = await revisedWithoutApproval();
    await withChromiumPage(VIEWPORT, async (page) => {
      await openRunPage(page, harness, viaPage.runId);
      await page.getByRole('button', { name: 'Approve plan' }).click();
      expect(await notice(page)).toBe('plan strict approved by alice; the run goes on');
      await page.waitForSelector('body[data-status="completed"]');
    });
    // `stepwise approve <runId>` approves the journaled plan; `stepwise resume --authorization` resumes with it.
    const revisedPlan = foldRun(await readAll(harness.store, viaCli.runId)).plan as Plan;
    await strict.resume(viaCli.runId, { authorization: approvePlan(revisedPlan, { by: 'alice' }) }).result;
    expect(await shapeByStep(harness.store, viaPage.runId)).toEqual(await shapeByStep(harness.store, viaCli.runId));
    const resumed = (await readAll(harness.store, viaPage.runId)).filter(
      (event): event is RunResumeEvent => event.type === 'run-resume',
    );
    expect(resumed.at(-1)?.authorization).toMatchObject({ by: 'alice', planDigest: viaPage.digest });
    expect(await stepStatuses(harness.store, viaPage.runId)).toEqual({
      one: 'succeeded',
      two: 'succeeded',
      extra: 'succeeded',
    });
  });
});

if (!chromiumAvailable) console.warn(skipMessage('the page action tests'));

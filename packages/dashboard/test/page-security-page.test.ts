import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Plan, readAll } from '@stepwise/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';
import type { DashboardAction } from '../src/index.js';
import { type Harness, startHarness } from './dashboard-harness.js';
import { openRunPage } from './page-helpers.js';

const VIEWPORT = { width: 1200, height: 900 };

const plan: Plan = {
  id: 'guarded',
  goal: 'Write a note someone must approve',
  steps: [{ id: 'write', tool: 'note_write', args: { text: 'hello' } }],
};

/** Another site's page: it posts an approval to the dashboard twice, as a form and with fetch. */
function attackerPage(target: string, requestId: string): string {
  const action = JSON.stringify({ kind: 'respond', requestId, decision: 'approve' });
  // text/plain forms need no preflight: the body is `name=value`, shaped here to be the JSON above.
  const name = action.slice(0, -1) + ',"padding":"';
  return `<!doctype html><html><body>
<form id="forged" method="post" action="${target}" enctype="text/plain" target="sink"><input type="hidden" name='${name}' value='"}'></form>
<iframe name="sink"></iframe>
<script>
document.getElementById('forged').submit();
fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: ${JSON.stringify(action)} })
  .then(function () { document.title = 'sent'; }, function () { document.title = 'sent'; });
</script></body></html>`;
}

describe.skipIf(!chromiumAvailable)('requests that must change nothing (SQLite)', () => {
  let harness: Harness;
  let attacker: Server;
  let attackerUrl: string;
  const asked: DashboardAction[] = [];
  let refuseActions = false;
  beforeAll(async () => {
    harness = await startHarness({
      authorize: (_request, action) => {
        asked.push(action);
        return !(refuseActions && action.kind !== 'view');
      },
    });
    attacker = createServer();
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    await new Promise((resolve) => attacker?.close(resolve));
    await harness?.close();
  });

  it("a POST from another site's page is refused, though the browser sends the session cookie", async () => {
    const run = await harness.engine.run(plan).result;
    const before = await readAll(harness.store, run.runId);
    const requestId = (before.find((event) => event.type === 'approval-request') as { executionId: string })
      .executionId;
    const target = `${harness.server.url}api/runs/${run.runId}/actions`;
    attacker.removeAllListeners('request');
    attacker.on('request', (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' }).end(attackerPage(target, requestId));
    });
    await withChromiumPage(VIEWPORT, async (page) => {
      // The person has the dashboard open (a session cookie), then visits the other site.
      await openRunPage(page, harness, run.runId);
      const statuses: number[] = [];
      page.on('response', (response) => {
        if (response.url() === target) statuses.push(response.status());
      });
      // Another port of 127.0.0.1 is another origin but the same site: SameSite lets the cookie go.
      await page.goto(attackerUrl);
      await page.waitForFunction('document.title === "sent"');
      await expect.poll(() => statuses.length, { timeout: 10_000 }).toBe(2);
      expect(statuses).toEqual([403, 403]);
    });
    const after = await readAll(harness.store, run.runId);
    expect(after).toEqual(before);
    expect((await harness.store.getRun(run.runId))?.status).toBe('waiting');
    expect(asked.filter((action) => action.kind !== 'view')).toEqual([]);
  });

  it('a request `authorize` refuses is answered E002 on the page and changes nothing', async () => {
    const run = await harness.engine.run(plan).result;
    const before = await readAll(harness.store, run.runId);
    refuseActions = true;
    try {
      await withChromiumPage(VIEWPORT, async (page) => {
        await openRunPage(page, harness, run.runId);
        await page.locator('.pending-request').getByRole('button', { name: 'Approve' }).click();
        await page.waitForSelector('#notice.error');
        expect(await page.locator('#notice').textContent()).toBe(`E002 not allowed: respond on run ${run.runId}`);
      });
    } finally {
      refuseActions = false;
    }
    expect(await readAll(harness.store, run.runId)).toEqual(before);
    expect(asked.filter((action) => action.kind === 'respond')).toEqual([
      {
        kind: 'respond',
        runId: run.runId,
        requestId: (before.find((event) => event.type === 'approval-request') as { executionId: string }).executionId,
        decision: 'approve',
      },
    ]);
  });
});

if (!chromiumAvailable) console.warn(skipMessage('the page security tests'));

import { createRedactor, ErrorCodes, type Plan, type RunEvent, readAll, StepwiseError } from '@stepwise/core';
import { sleep } from '@stepwise/core/engine';
import { MemoryStore } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDashboard, type Dashboard, type DashboardOptions, TOKEN_HEADER } from '../src/index.js';
import { testTools } from './dashboard-harness.js';

const ORIGIN = 'http://127.0.0.1:4000';
const SECRET = 'sk-live-0123456789abcdefSECRET';

const store = new MemoryStore();
const engine = dagEngine({
  tools: testTools(new Set()),
  store,
  approvals: { policy: { effects: { write: 'pause' } } },
  redactor: createRedactor({ secrets: [SECRET] }),
});
let waitingRunId = '';

function dashboard(options: Partial<DashboardOptions> = {}): Dashboard {
  return createDashboard({ store, resume: (runId, resume) => engine.resume(runId, resume), ...options });
}

/** A response's JSON body, as the assertions read it. */
// biome-ignore lint/suspicious/noExplicitAny: the assertions check its shape
async function json(response: Response | Promise<Response>): Promise<any> {
  return (await response).json();
}

function get(handler: Dashboard, path: string, headers: Record<string, string> = {}): Promise<Response> {
  return handler.fetch(new Request(`${ORIGIN}${path}`, { headers }));
}

/** A browser session: the page's cookie and token, as the run page hands them out. */
async function session(handler: Dashboard, runId: string) {
  const page = await get(handler, `${handler.basePath}/runs/${runId}`);
  const html = await page.text();
  return {
    cookie: (page.headers.get('set-cookie') ?? '').split(';')[0] as string,
    token: /name="stepwise-token" content="([^"]+)"/.exec(html)?.[1] as string,
  };
}

function post(handler: Dashboard, runId: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return handler.fetch(
    new Request(`${ORIGIN}${handler.basePath}/api/runs/${runId}/actions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
}

const goals = ['Deploy the web app', 'Bump the version', 'Rotate the keys'];

beforeAll(async () => {
  // 120 runs: three goals in turn, every tenth waiting for an approval.
  for (let index = 0; index < 120; index++) {
    const plan: Plan = {
      id: `plan-${index}`,
      goal: `${goals[index % 3]} #${index}`,
      steps: [
        {
          id: 'only',
          tool: index % 10 === 0 ? 'note_write' : 'sleep_ms',
          args: index % 10 === 0 ? { text: SECRET } : { ms: 0 },
        },
      ],
    };
    await engine.run(plan).result;
    // Distinct start times: the list's order is the store's, newest first.
    await sleep(2);
  }
  waitingRunId = (await store.listRuns({ status: 'waiting', limit: 1 }))[0]?.runId as string;
});

describe('the runs list', () => {
  it('pages through the store newest first, with the next page known', async () => {
    const handler = dashboard({ pageSize: 50 });
    const first = await json(get(handler, '/api/runs'));
    expect(first.runs).toHaveLength(50);
    expect(first.hasMore).toBe(true);
    expect(first.runs[0]).toMatchObject({ planId: 'plan-119', goal: 'Rotate the keys #119', status: 'completed' });
    const last = await json(get(handler, '/api/runs?page=2'));
    expect(last.runs.map((run: { planId: string }) => run.planId)).toEqual(
      Array.from({ length: 20 }, (_, index) => `plan-${19 - index}`),
    );
    expect(last.hasMore).toBe(false);
  });

  it('filters by status and says what waiting runs wait on', async () => {
    const page = await json(get(dashboard(), '/api/runs?status=waiting'));
    expect(page.runs).toHaveLength(12);
    expect(page.runs.every((run: { status: string }) => run.status === 'waiting')).toBe(true);
    expect(page.runs[0].waitingOn).toEqual(['approval of note_write (write) at only']);
    const both = await json(get(dashboard(), '/api/runs?status=waiting,completed'));
    expect(both.runs).toHaveLength(50);
  });

  it('searches goals, plan ids and run ids, every word, any case', async () => {
    const handler = dashboard({ pageSize: 10 });
    const keys = await json(get(handler, '/api/runs?q=ROTATE%20keys'));
    expect(keys.runs).toHaveLength(10);
    expect(keys.hasMore).toBe(true);
    expect(keys.runs.every((run: { goal: string }) => run.goal.startsWith('Rotate the keys'))).toBe(true);
    const byPlan = await json(get(handler, '/api/runs?q=plan-42'));
    expect(byPlan.runs.map((run: { planId: string }) => run.planId)).toEqual(['plan-42']);
    const byRun = await json(get(handler, `/api/runs?q=${waitingRunId}`));
    expect(byRun.runs.map((run: { runId: string }) => run.runId)).toEqual([waitingRunId]);
    // The store searches every run, the oldest too, and pages the matches: plan-5 and plan-50…59.
    const oldest = await json(get(handler, '/api/runs?q=plan-5&page=1'));
    expect(oldest.runs.map((run: { planId: string }) => run.planId)).toEqual(['plan-5']);
    expect(oldest.hasMore).toBe(false);
  });

  it('answers a bad query with E004 naming the parameter', async () => {
    const bad = await get(dashboard(), '/api/runs?status=sleeping');
    expect(bad.status).toBe(400);
    expect((await json(bad)).error).toMatchObject({ code: ErrorCodes.INPUT_INVALID, location: 'status' });
    const page = await get(dashboard(), '/api/runs?page=-1');
    expect((await json(page)).error).toMatchObject({ code: ErrorCodes.INPUT_INVALID, location: 'page' });
  });
});

describe('a run', () => {
  it('is answered as the report model, the actions it allows and nothing secret', async () => {
    const response = await get(dashboard(), `/api/runs/${waitingRunId}`);
    const text = await response.text();
    expect(text).not.toContain(SECRET);
    const view = JSON.parse(text);
    expect(view.status).toBe('waiting');
    expect(view.parts.graph).toContain('data-step-id="only"');
    expect(view.actions.pending).toHaveLength(1);
    expect(view.actions.canContinue).toBe(true);
    const page = await (await get(dashboard(), `/runs/${waitingRunId}`)).text();
    expect(page).toContain('[REDACTED]');
    expect(page).not.toContain(SECRET);
  });

  it('that is not in the store is E505 (404), as JSON for the API and as a page for a link', async () => {
    const response = await get(dashboard(), '/api/runs/run_missing');
    expect(response.status).toBe(404);
    expect((await json(response)).error.code).toBe(ErrorCodes.RUN_NOT_FOUND);
    const page = await get(dashboard({ basePath: '/ops' }), '/ops/runs/run_<missing>');
    expect([page.status, page.headers.get('content-type')]).toEqual([404, 'text/html; charset=utf-8']);
    const html = await page.text();
    expect(html).toContain('E505 run run_&lt;missing&gt; is not in the store');
    expect(html).toContain('<a href="/ops/">All runs</a>');
  });

  it('streams the journal events after `after`, then the page drawn again', async () => {
    const controller = new AbortController();
    const response = await dashboard({ pollIntervalMs: 20 }).fetch(
      new Request(`${ORIGIN}/api/runs/${waitingRunId}/events?after=2`, { signal: controller.signal }),
    );
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    while (!text.includes('event: view')) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    await reader.cancel();
    const events = await readAll(store, waitingRunId);
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
    expect(ids).toEqual(events.filter((event: RunEvent) => event.seq > 2).map((event) => event.seq));
    expect(text).not.toContain(SECRET);
  });
});

describe('the page', () => {
  it('runs only scripts and styles of its own nonce: no inline code, no style attribute', async () => {
    for (const path of ['/', `/runs/${waitingRunId}`]) {
      const response = await get(dashboard(), path);
      const policy = response.headers.get('content-security-policy') as string;
      const nonce = /'nonce-([^']+)'/.exec(policy)?.[1];
      expect(policy).toContain(`script-src 'nonce-${nonce}'`);
      expect(policy).not.toContain('unsafe');
      expect(policy).toContain("frame-ancestors 'none'");
      const html = await response.text();
      const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((match) => match[1] as string);
      for (const attributes of scripts) {
        if (attributes.includes('type="application/json"')) continue;
        expect(attributes).toContain(`nonce="${nonce}"`);
        expect(attributes).toMatch(/ src="[^"]+"/);
      }
      expect(html).not.toMatch(/\sstyle="/);
      expect(html).not.toMatch(/\son[a-z]+="/);
    }
  });

  it('is served under the base path; other paths are the host’s', async () => {
    const handler = dashboard({ basePath: '/ops/stepwise' });
    expect(handler.handles('/ops/stepwise/runs/x')).toBe(true);
    expect(handler.handles('/ops/stepwiser')).toBe(false);
    expect((await get(handler, '/elsewhere')).status).toBe(404);
    const bare = await get(handler, '/ops/stepwise?q=x');
    expect([bare.status, bare.headers.get('location')]).toEqual([308, '/ops/stepwise/?q=x']);
    const page = await (await get(handler, '/ops/stepwise/')).text();
    expect(page).toContain('src="/ops/stepwise/assets/runs.js"');
  });
});

describe('an action', () => {
  const approve = () => ({
    kind: 'respond',
    requestId: '',
    decision: 'approve',
  });

  it('changes nothing without the same origin, the session token, authorize or in read-only mode', async () => {
    // One secret for every dashboard here: the read-only and `authorize` refusals must be theirs,
    // not a token from another dashboard's secret.
    const secret = 'one secret for the dashboards of this test';
    const handler = dashboard({ secret });
    const { cookie, token } = await session(handler, waitingRunId);
    const before = await readAll(store, waitingRunId);
    const requestId = (before.find((event) => event.type === 'approval-request') as { executionId: string })
      .executionId;
    const action = { ...approve(), requestId };
    const withToken = { cookie, [TOKEN_HEADER]: token, origin: ORIGIN };
    const tampered = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    const refusals: [string, Dashboard, Record<string, string>, RegExp][] = [
      ['no Origin', handler, { cookie, [TOKEN_HEADER]: token }, /cross-site/],
      ['another Origin', handler, { ...withToken, origin: 'https://evil.example' }, /cross-site/],
      ['cross-site fetch', handler, { cookie, [TOKEN_HEADER]: token, 'sec-fetch-site': 'cross-site' }, /cross-site/],
      ['no token', handler, { cookie, origin: ORIGIN }, /session token/],
      ['a tampered token', handler, { ...withToken, [TOKEN_HEADER]: tampered }, /session token/],
      ['read-only', dashboard({ secret, readOnly: true }), withToken, /read-only/],
      [
        'authorize',
        dashboard({ secret, authorize: (_request, asked) => asked.kind === 'view' }),
        withToken,
        /not allowed: respond/,
      ],
    ];
    for (const [what, refusing, headers, message] of refusals) {
      const refusal = await post(refusing, waitingRunId, action, headers);
      expect(refusal.status, what).toBe(403);
      const { error } = await json(refusal);
      expect([error.code, message.test(error.message)], what).toEqual([ErrorCodes.NOT_AUTHORIZED, true]);
    }
    expect(await readAll(store, waitingRunId)).toEqual(before);
    const invalid = await post(
      handler,
      waitingRunId,
      { kind: 'respond', requestId },
      { cookie, [TOKEN_HEADER]: token, origin: ORIGIN },
    );
    expect([invalid.status, (await json(invalid)).error.location]).toEqual([400, 'decision']);
    const notJson = await post(handler, waitingRunId, '{', { cookie, [TOKEN_HEADER]: token, origin: ORIGIN });
    expect((await json(notJson)).error.code).toBe(ErrorCodes.INPUT_INVALID);
    expect(await readAll(store, waitingRunId)).toEqual(before);
  });

  it('goes through with them all, journaled with who did it', async () => {
    const handler = dashboard({ actor: () => 'carol' });
    const runId = (await store.listRuns({ status: 'waiting', limit: 1, offset: 1 }))[0]?.runId as string;
    const { cookie, token } = await session(handler, runId);
    const requestId = (await readAll(store, runId)).find((event) => event.type === 'approval-request') as {
      executionId: string;
    };
    const response = await post(
      handler,
      runId,
      { ...approve(), requestId: requestId.executionId },
      {
        cookie,
        [TOKEN_HEADER]: token,
        'sec-fetch-site': 'same-origin',
      },
    );
    expect(await json(response)).toEqual({ ok: true, message: 'approve journaled; the run goes on' });
    await handler.close();
    expect((await store.getRun(runId))?.status).toBe('completed');
    const answer = (await readAll(store, runId)).find((event) => event.type === 'approval-response');
    expect(answer).toMatchObject({ decision: 'approve', by: 'carol' });
  });

  it('to continue a run needs `resume`: without it E601, and nothing changes', async () => {
    const handler = createDashboard({ store });
    const runId = (await store.listRuns({ status: 'waiting', limit: 1, offset: 2 }))[0]?.runId as string;
    const { cookie, token } = await session(handler, runId);
    const before = await readAll(store, runId);
    const response = await post(
      handler,
      runId,
      { kind: 'continue', retry: [], skip: [] },
      { cookie, [TOKEN_HEADER]: token, origin: ORIGIN },
    );
    expect([response.status, (await json(response)).error.code]).toEqual([409, ErrorCodes.CONFIG_INVALID]);
    expect(await readAll(store, runId)).toEqual(before);
  });
});

describe('createDashboard', () => {
  it('refuses bad options with E601 naming the option', () => {
    const bad: [Partial<DashboardOptions>, string][] = [
      [{ store: undefined as never }, '/store'],
      [{ basePath: 'stepwise' }, '/basePath'],
      [{ basePath: '/stepwise/' }, '/basePath'],
      [{ pageSize: 0 }, '/pageSize'],
      [{ pageSize: 2.5 }, '/pageSize'],
      [{ pollIntervalMs: Number.NaN }, '/pollIntervalMs'],
      [{ authorize: 'yes' as never }, '/authorize'],
    ];
    for (const [options, location] of bad) {
      const error = (() => {
        try {
          createDashboard({ store, ...options });
        } catch (thrown) {
          return thrown;
        }
        return undefined;
      })();
      expect(StepwiseError.isInstance(error) && [error.code, error.location]).toEqual([
        ErrorCodes.CONFIG_INVALID,
        location,
      ]);
    }
  });
});

// A small approval host on plain node:http: one page lists what waiting runs wait on (approval
// requests with Approve / Deny, questions with a text box), and a POST journals the answer with
// `respond()` and resumes the run in this process.
import { createServer } from 'node:http';
import { pendingApprovals, respond, StepwiseError } from '@stepwise/core';

/** Larger form bodies are refused: an answer is a few words. */
const MAX_BODY = 64 * 1024;

function escapeHtml(value) {
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function hidden(name, value) {
  return `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
}

function requestRow(request) {
  const ids = hidden('runId', request.runId) + hidden('requestId', request.requestId);
  if (request.kind === 'question') {
    return `<li class="request" data-step-id="${escapeHtml(request.stepId)}"><p><b>${escapeHtml(request.stepId)}</b> asks (${escapeHtml(request.cause)}): ${escapeHtml(request.question)}</p>
<form method="post" action="/respond">${ids}<textarea name="answer" required></textarea><button type="submit">Answer</button></form></li>`;
  }
  return `<li class="request" data-step-id="${escapeHtml(request.stepId)}"><p><b>${escapeHtml(request.stepId)}</b> wants to run <code>${escapeHtml(request.tool)}</code> (${escapeHtml(request.effect)}) in run <code>${escapeHtml(request.runId)}</code></p>
<pre class="args">${escapeHtml(JSON.stringify(request.args, null, 2))}</pre>
<form method="post" action="/respond">${ids}<button type="submit" name="decision" value="approve">Approve</button> <button type="submit" name="decision" value="deny">Deny</button></form></li>`;
}

function page({ requests, runs, notice, working }) {
  const list = requests.length
    ? `<ul id="pending">${requests.map(requestRow).join('')}</ul>`
    : '<p id="pending-empty">Nothing is waiting for an answer.</p>';
  const rows = runs
    .map(
      (run) =>
        `<tr data-run-id="${escapeHtml(run.runId)}"><td><code>${escapeHtml(run.runId)}</code></td><td>${escapeHtml(run.planId)}</td><td class="status">${escapeHtml(run.status)}</td><td>${escapeHtml(run.updatedAt)}</td></tr>`,
    )
    .join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Approvals</title>
${working ? '<meta http-equiv="refresh" content="1">' : ''}
<style>body{font:15px system-ui,sans-serif;margin:2rem;max-width:60rem}pre{background:#f3f4f6;padding:.5rem}li{margin-bottom:1rem}.notice{color:#1d4ed8}.error{color:#b91c1c}td{padding:.2rem .8rem}</style></head>
<body><h1>Waiting for you</h1>${notice ? `<p class="${notice.error ? 'error' : 'notice'}" id="notice">${escapeHtml(notice.text)}</p>` : ''}
${list}<h2>Runs</h2><table id="runs"><tr><th>run</th><th>plan</th><th>status</th><th>updated</th></tr>${rows}</table></body></html>`;
}

function readForm(request) {
  return new Promise((resolve, reject) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => {
      body += chunk;
      if (body.length > MAX_BODY) reject(Object.assign(new Error('the form is too large'), { status: 413 }));
    });
    request.on('end', () => resolve(new URLSearchParams(body)));
    request.on('error', reject);
  });
}

/**
 * Starts the host. `engine` resumes answered runs; `store` is the journal both use. Binds to
 * 127.0.0.1 by default and has no login: put it behind your own authentication before anyone
 * else can reach it. Returns `{ url, close() }`; `close` waits for the resumes it started.
 */
export async function startApprovalHost({ engine, store, port = 0, hostname = '127.0.0.1', by = 'web reviewer' }) {
  const resumes = new Map();
  // What the next page view says (an answer recorded, or refused, or a resume that failed).
  let latest;
  let url = '';

  async function answer(request, response) {
    // A form on another site must not answer for the person looking at this page.
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== url) {
      response.writeHead(403, { 'content-type': 'text/plain' }).end('cross-origin answers are refused');
      return;
    }
    const form = await readForm(request);
    const runId = form.get('runId') ?? '';
    const text = form.get('answer');
    const decision = form.get('decision');
    let notice;
    try {
      await respond(store, runId, {
        requestId: form.get('requestId') ?? '',
        ...(text === null ? { decision: decision === 'approve' ? 'approve' : 'deny' } : { answer: text }),
        by,
      });
      const result = engine.resume(runId).result;
      resumes.set(runId, result);
      result
        .catch((error) => {
          latest = { error: true, text: `resuming ${runId} failed: ${error.message}` };
        })
        .finally(() => resumes.delete(runId));
      notice = { text: `${text === null ? decision : 'answer'} recorded for ${runId}; the run goes on` };
    } catch (error) {
      if (!StepwiseError.isInstance(error)) throw error;
      notice = { error: true, text: `${error.code}: ${error.message}` };
    }
    latest = notice;
    response.writeHead(303, { location: '/' }).end();
  }

  async function show(response) {
    const waiting = await store.listRuns({ status: 'waiting', limit: 100 });
    const requests = (await Promise.all(waiting.map((run) => pendingApprovals(store, run.runId)))).flat();
    const runs = await store.listRuns({ limit: 20 });
    const notice = latest;
    latest = undefined;
    response
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(page({ requests, runs, notice, working: resumes.size > 0 }));
  }

  const server = createServer((request, response) => {
    const route = `${request.method} ${new URL(request.url ?? '/', 'http://host').pathname}`;
    const work = route === 'GET /' ? show(response) : route === 'POST /respond' ? answer(request, response) : undefined;
    if (!work) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    work.catch((error) => {
      if (!response.headersSent) response.writeHead(error.status ?? 500, { 'content-type': 'text/plain' });
      response.end(error.message);
    });
  });
  await new Promise((resolve) => server.listen(port, hostname, resolve));
  url = `http://${hostname}:${server.address().port}`;
  return {
    url,
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeIdleConnections();
      await closed;
      await Promise.allSettled([...resumes.values()]);
    },
  };
}

import { embedJson, escapeHtml } from '../report/escape-html.js';
import { DETAILS_PANEL, renderReportSections } from '../report/render-report.js';
import type { RunView } from '../runs/run-view.js';
import { RUN_STATES, type RunsPage } from '../runs/runs-list.js';

/** What every page needs: where the dashboard is mounted, this response's nonce, the session's token. */
export interface PageContext {
  readonly basePath: string;
  readonly nonce: string;
  readonly token: string;
  readonly readOnly: boolean;
}

/** Assets the pages load, by file name: each served from `<basePath>/assets/<name>`. */
export const ASSET_NAMES = ['report.css', 'dashboard.css', 'report.js', 'runs.js', 'run.js'] as const;
export type AssetName = (typeof ASSET_NAMES)[number];

function head(context: PageContext, title: string): string {
  const { basePath, nonce, token } = context;
  const style = (name: AssetName) =>
    `<link rel="stylesheet" nonce="${escapeHtml(nonce)}" href="${escapeHtml(`${basePath}/assets/${name}`)}">`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="stepwise-base" content="${escapeHtml(basePath)}">
<meta name="stepwise-token" content="${escapeHtml(token)}">
<title>${escapeHtml(title)}</title>
${style('report.css')}
${style('dashboard.css')}
</head>`;
}

function script(context: PageContext, name: AssetName): string {
  return `<script nonce="${escapeHtml(context.nonce)}" src="${escapeHtml(`${context.basePath}/assets/${name}`)}"></script>`;
}

function topBar(context: PageContext, crumb: string): string {
  return `<nav class="topbar"><a href="${escapeHtml(`${context.basePath}/`)}">Stepwise</a><span>${crumb}</span><span class="spacer"></span>${context.readOnly ? '<span class="read-only">read-only</span>' : ''}<span class="live-state" id="live-state">connecting</span></nav>`;
}

const STATUS_FILTERS: readonly [string, string][] = [
  ['', 'every status'],
  ['running,waiting', 'in progress (running, waiting)'],
  ['failed,partial', 'needs attention (failed, partial)'],
  ...RUN_STATES.map((status): [string, string] => [status, status]),
];

/** The runs list: filters, the table (filled by the script from the embedded first page), paging. */
export function renderRunsPage(page: RunsPage, context: PageContext): string {
  const selected = page.query.status.join(',');
  const options = STATUS_FILTERS.map(
    ([value, label]) =>
      `<option value="${escapeHtml(value)}"${value === selected ? ' selected' : ''}>${escapeHtml(label)}</option>`,
  ).join('');
  const headings = ['run', 'status', 'engine', 'goal', 'started', 'duration', 'steps', 'waiting on']
    .map((name) => `<th>${name}</th>`)
    .join('');
  return `${head(context, 'Stepwise · runs')}
<body class="runs-page">
${topBar(context, 'runs')}
<main class="runs-main">
<form id="filters" class="filters" role="search">
<input type="search" name="q" placeholder="search goal, plan id or run id" aria-label="search runs" value="${escapeHtml(page.query.search)}">
<select name="status" aria-label="status">${options}</select>

</form>
<table id="runs"><thead><tr>${headings}</tr></thead><tbody></tbody></table>
<p class="empty-list" id="runs-empty" hidden>No runs here yet.</p>
<div class="pager"><button type="button" id="previous">← newer</button><span id="page-label"></span><button type="button" id="next">older →</button></div>
</main>
<script type="application/json" id="stepwise-runs">${embedJson(page)}</script>
${script(context, 'runs.js')}
</body>
</html>
`;
}

/** A run's page: the report's pieces, the actions, the live journal; the scripts keep it current. */
export function renderRunPage(view: RunView, context: PageContext): string {
  const state = {
    runId: view.runId,
    seq: view.seq,
    status: view.status,
    title: view.title,
    planDigest: view.data.run.planDigest,
    actions: view.actions,
  };
  const sections = renderReportSections(
    { title: view.title, ...view.parts },
    `<div id="history">${view.parts.history}</div>`,
  );
  return `${head(context, view.title)}
<body class="run-page" data-status="${escapeHtml(view.status)}" data-seq="${view.seq}">
${topBar(context, `run <span class="mono">${escapeHtml(view.runId)}</span>`)}
<header>
${view.parts.header}
</header>
<div class="layout">
<main>
<p class="notice" id="notice" role="status"></p>
<section id="actions-section" hidden><h2>Actions</h2><div class="actions" id="actions"></div></section>
${sections}
<section id="events-section"><h2>Journal <small>(new events as they are written)</small></h2><ol id="events"></ol></section>
</main>
${DETAILS_PANEL}
</div>
<script type="application/json" id="stepwise-data">${embedJson(view.data)}</script>
<script type="application/json" id="stepwise-view">${embedJson(state)}</script>
${script(context, 'report.js')}
${script(context, 'run.js')}
</body>
</html>
`;
}

import { embedJson, escapeHtml, truncate } from './escape-html.js';
import { formatDuration } from './format-duration.js';
import { renderDag } from './render-graph.js';
import { renderHistory } from './render-history.js';
import { renderTimeline } from './render-timeline.js';
import type { ReportModel, StepDetail } from './report-model.js';
import { REPORT_SCRIPT } from './report-script.js';
import { REPORT_STYLE } from './report-style.js';

/** Working time, and the wait for a person beside it: "5 ms (+4.9 s waiting)". */
function stepTime(step: StepDetail): string {
  const working = formatDuration(step.toolMs);
  return step.waitingMs > 0 ? `${working} (+${formatDuration(step.waitingMs)} waiting)` : working;
}

function renderStepTable(model: ReportModel): string {
  // Counted once: filtering the bars for each step made a 10,000-step run's table quadratic.
  const attemptsOf = new Map<string, number>();
  for (const bar of model.bars) attemptsOf.set(bar.stepId, (attemptsOf.get(bar.stepId) ?? 0) + 1);
  const rows = model.steps.map((step) => {
    const attempts = attemptsOf.get(step.id) ?? 0;
    const error = step.result?.error ? `${step.result.error.code} ${step.result.error.message}` : '';
    return `<tr data-step-id="${escapeHtml(step.id)}" tabindex="0"><td class="mono">${escapeHtml(step.id)}</td><td class="mono">${escapeHtml(step.tool ?? '')}</td><td><span class="badge status-${escapeHtml(step.status)}">${escapeHtml(step.status)}</span></td><td>${attempts}</td><td>${escapeHtml(stepTime(step))}</td><td>${escapeHtml(truncate(error, 120))}</td></tr>`;
  });
  return `<table id="steps"><thead><tr><th>step</th><th>tool</th><th>status</th><th>attempts</th><th>working time</th><th>error</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

const LEGEND = [
  ...['succeeded', 'failed', 'denied', 'skipped', 'cancelled', 'waiting', 'interrupted', 'running', 'pending'].map(
    (status) => `<span class="status-${status}">${status}</span>`,
  ),
  '<span class="waiting-swatch">waiting for a person (timeline)</span>',
].join('');

/** Graph zoom: the graph keeps its natural size (scrolling both ways) unless fitted or zoomed. */
const ZOOM_CONTROLS =
  '<div class="zoom" role="group" aria-label="graph zoom"><button type="button" data-zoom="out" aria-label="zoom out">−</button><button type="button" data-zoom="fit">fit</button><button type="button" data-zoom="reset">100%</button><button type="button" data-zoom="in" aria-label="zoom in">+</button></div>';

/** A long critical path by its ends: a 10,000-step chain's would fill the header. */
function pathText(path: readonly string[]): string | undefined {
  if (path.length === 0) return undefined;
  if (path.length <= 12) return path.join(' → ');
  return `${path.slice(0, 5).join(' → ')} → … ${path.length - 10} more … → ${path.slice(-5).join(' → ')}`;
}

/** The header line naming the step a failed run is about, linked to its details. */
function renderFailure(step: StepDetail): string {
  const error = step.result?.error;
  return `<p class="failure" id="run-failure">Failed at step <a class="step-link mono" data-goto="${escapeHtml(step.id)}" href="#step=${encodeURIComponent(step.id)}">${escapeHtml(step.id)}</a>${step.tool ? ` (${escapeHtml(step.tool)})` : ''}${error ? `: ${escapeHtml(error.code)} ${escapeHtml(truncate(error.message, 200))}` : ''}</p>`;
}

/** What the page's script reads: the run, its steps and their executions (the details panel is drawn from it). */
export function reportData(model: ReportModel) {
  return {
    run: model.run,
    steps: model.steps,
    bars: model.bars,
    criticalPath: model.criticalPath,
    waits: model.waits,
    waitingMs: model.waitingMs,
    failingStepId: model.failingStepId,
    span: model.span,
  };
}

export type ReportData = ReturnType<typeof reportData>;

/**
 * The report's pieces, each a string of HTML the static report and the live page place the same
 * way (the live page replaces each piece as the run goes on).
 */
export interface ReportParts {
  /** The document's title (text). */
  readonly title: string;
  /** Inside `<header>`: the goal, status, the failing step and the run's facts. */
  readonly header: string;
  /** The plan graph (SVG). */
  readonly graph: string;
  /** The timeline (SVG). */
  readonly timeline: string;
  /** The steps table. */
  readonly steps: string;
  /** The revisions and attempts sections (empty when the run has neither). */
  readonly history: string;
}

function renderMeta(model: ReportModel): string {
  const { run } = model;
  const counts = new Map<string, number>();
  for (const status of model.whole?.stepStatuses ?? model.steps.map((step) => step.status)) {
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
  const countText = [...counts].map(([status, count]) => `${count} ${status}`).join(', ');
  const meta: [string, string | undefined][] = [
    ['run', run.runId],
    ['plan', run.planId],
    ['digest', run.planDigest.slice(0, 16)],
    ['engine', run.engine],
    ['started', run.createdAt],
    ['duration', formatDuration(run.durationMs ?? model.span)],
    ['steps', countText],
    ['executions', String(model.whole?.executions ?? model.bars.length)],
    ['waiting for a person', model.waitingMs > 0 ? formatDuration(model.waitingMs) : undefined],
    ['tokens', run.usage ? String(run.usage.totalTokens) : undefined],
    ['approved by', run.authorization?.by],
    ['critical path', pathText(model.criticalPath)],
  ];
  return meta
    .filter(([, value]) => value)
    .map(([name, value]) => `<div><dt>${escapeHtml(name)}</dt><dd>${escapeHtml(value)}</dd></div>`)
    .join('');
}

export function reportParts(model: ReportModel): ReportParts {
  const { run } = model;
  const heading = run.goal ? run.goal : run.planId;
  const failing = model.steps.find((step) => step.id === model.failingStepId);
  return {
    title: `Stepwise · ${heading} · ${run.status}${failing ? ` at ${failing.id}` : ''}`,
    header: `<h1>${escapeHtml(heading)} <span class="badge status-${escapeHtml(run.status)}" id="run-status">${escapeHtml(run.status)}</span></h1>
${failing ? renderFailure(failing) : ''}<p class="goal">Plan <span class="mono">${escapeHtml(run.planId)}</span> run by the ${escapeHtml(run.engine)} engine. Click a step for its arguments, output, errors, approvals and model turns.</p>
<dl class="meta">${renderMeta(model)}</dl>`,
    graph: renderDag(model),
    timeline: renderTimeline(model),
    steps: renderStepTable(model),
    history: renderHistory(model),
  };
}

/** The report's sections (graph, timeline, steps), then `history` as given (the live page wraps it to replace it). */
export function renderReportSections(parts: ReportParts, history = parts.history): string {
  return `<section id="graph-section"><h2>Plan graph</h2><div class="legend">${LEGEND}<span class="legend-critical">critical path (thick outline)</span></div>${ZOOM_CONTROLS}<div class="scroll" id="graph-scroll">${parts.graph}</div></section>
<section id="timeline-section"><h2>Timeline <small>(one bar per execution; retries are separate bars in the same row; hatched: waiting for a person)</small></h2><div class="scroll" id="timeline-scroll">${parts.timeline}</div></section>
<section id="steps-section"><h2>Steps</h2>${parts.steps}</section>
${history}`;
}

/** The panel the page's script fills with the selected step's details. */
export const DETAILS_PANEL =
  '<aside id="details" aria-live="polite"><h2>Step details</h2><p class="empty">Select a step in the graph, the timeline or the table.</p></aside>';

/** The whole report: one HTML document with inline CSS, SVG, data and script; no network. */
export function renderReport(model: ReportModel, options: { readonly generatedAt?: Date } = {}): string {
  const parts = reportParts(model);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>${escapeHtml(parts.title)}</title>
<style>${REPORT_STYLE}</style>
</head>
<body>
<header>
${parts.header}
</header>
<div class="layout">
<main>
${renderReportSections(parts)}
</main>
${DETAILS_PANEL}
</div>
<footer>Generated by stepwise report${options.generatedAt ? ` on ${escapeHtml(options.generatedAt.toISOString())}` : ''} from ${model.eventCount} journal events.</footer>
<script type="application/json" id="stepwise-data">${embedJson(reportData(model))}</script>
<script>${REPORT_SCRIPT}</script>
</body>
</html>
`;
}

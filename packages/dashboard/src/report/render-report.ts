import { formatDuration } from './format-duration.js';
import { layoutDag } from './layout-dag.js';
import { renderHistory } from './render-history.js';
import type { ReportModel, StepDetail } from './report-model.js';
import { REPORT_SCRIPT } from './report-script.js';
import { REPORT_STYLE } from './report-style.js';

const NODE_WIDTH = 176;
const NODE_HEIGHT = 46;
const ROW_HEIGHT = 24;
const LABEL_WIDTH = 170;
const TIMELINE_WIDTH = 640;

export function escapeHtml(text: unknown): string {
  return String(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** Working time, and the wait for a person beside it: "5 ms (+4.9 s waiting)". */
function stepTime(step: StepDetail): string {
  const working = formatDuration(step.toolMs);
  return step.waitingMs > 0 ? `${working} (+${formatDuration(step.waitingMs)} waiting)` : working;
}

function renderDag(model: ReportModel): string {
  const dependencies = new Map(model.steps.map((step) => [step.id, step.dependsOn]));
  const layout = layoutDag(
    model.steps.map((step) => step.id),
    dependencies,
    { nodeWidth: NODE_WIDTH, nodeHeight: NODE_HEIGHT },
  );
  const onPath = model.criticalPath;
  const criticalEdges = new Set(onPath.slice(1).map((id, index) => `${onPath[index]}\u0000${id}`));
  const edges = layout.edges.map((edge) => {
    const [first, ...rest] = edge.points;
    if (!first) return '';
    let d = `M${first.x.toFixed(1)},${first.y.toFixed(1)}`;
    let previous = first;
    for (const point of rest) {
      const bend = (point.x - previous.x) / 2;
      d += ` C${(previous.x + bend).toFixed(1)},${previous.y.toFixed(1)} ${(point.x - bend).toFixed(1)},${point.y.toFixed(1)} ${point.x.toFixed(1)},${point.y.toFixed(1)}`;
      previous = point;
    }
    const critical = criticalEdges.has(`${edge.from}\u0000${edge.to}`);
    return `<path class="edge${critical ? ' critical' : ''}" data-from="${escapeHtml(edge.from)}" data-to="${escapeHtml(edge.to)}" d="${d}" marker-end="url(#${critical ? 'arrow-critical' : 'arrow'})"/>`;
  });
  const nodes = model.steps.map((step) => {
    const at = layout.nodes.get(step.id);
    if (!at) return '';
    const sub = [step.tool ?? 'agentic goal', formatDuration(step.toolMs)].filter(Boolean).join(' · ');
    const classes = ['node', `status-${step.status}`, step.onCriticalPath ? 'critical' : ''].filter(Boolean).join(' ');
    return [
      `<g class="${classes}" data-step-id="${escapeHtml(step.id)}" transform="translate(${at.x.toFixed(1)},${at.y.toFixed(1)})" tabindex="0" role="button" aria-label="step ${escapeHtml(step.id)}: ${escapeHtml(step.status)}">`,
      `<title>${escapeHtml(`${step.id} (${step.tool ?? 'agentic'}): ${step.status}${step.result?.error ? ` — ${step.result.error.code} ${step.result.error.message}` : ''}`)}</title>`,
      `<rect class="box" width="${NODE_WIDTH}" height="${NODE_HEIGHT}" rx="7"/>`,
      `<rect class="status-strip" width="6" height="${NODE_HEIGHT - 2}" x="1" y="1" rx="3"/>`,
      `<text class="label" x="14" y="19">${escapeHtml(truncate(step.id, 22))}</text>`,
      `<text class="sub" x="14" y="35">${escapeHtml(truncate(sub, 27))}</text>`,
      '</g>',
    ].join('');
  });
  const arrow = (id: string, colour: string) =>
    `<marker id="${id}" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${colour}"/></marker>`;
  return [
    `<svg id="dag" xmlns="http://www.w3.org/2000/svg" width="${layout.width}" height="${layout.height}" viewBox="0 0 ${layout.width} ${layout.height}" role="img" aria-label="plan graph">`,
    `<defs>${arrow('arrow', '#a3adb9')}${arrow('arrow-critical', '#111827')}</defs>`,
    `<g class="edges">${edges.join('')}</g>`,
    `<g class="nodes">${nodes.join('')}</g>`,
    '</svg>',
  ].join('');
}

/** Round tick spacing so the axis shows about eight labels. */
function tickStep(span: number): number {
  const raw = span / 8;
  const magnitude = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  for (const factor of [1, 2, 5, 10]) if (raw <= factor * magnitude) return factor * magnitude;
  return 10 * magnitude;
}

/** The hatching of waits: time a step spent waiting for a person is not drawn as work. */
const WAITING_HATCH =
  '<defs><pattern id="waiting-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ecfeff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#0e7490" stroke-width="2"/></pattern></defs>';

function renderTimeline(model: ReportModel): string {
  const span = Math.max(model.span, ...model.bars.map((bar) => bar.end), 1);
  const scale = TIMELINE_WIDTH / span;
  const top = 26;
  const height = top + model.steps.length * ROW_HEIGHT + 8;
  const width = LABEL_WIDTH + TIMELINE_WIDTH + 20;
  const rows = new Map(model.steps.map((step, index) => [step.id, index]));
  const parts: string[] = [];
  const step = tickStep(span);
  parts.push('<g class="axis">');
  for (let tick = 0; tick <= span + 0.5; tick += step) {
    const x = LABEL_WIDTH + tick * scale;
    parts.push(
      `<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${top - 6}" y2="${height - 8}"/><text x="${x.toFixed(1)}" y="${top - 10}" text-anchor="middle">${escapeHtml(formatDuration(tick))}</text>`,
    );
  }
  parts.push('</g>');
  model.steps.forEach((detail, index) => {
    const y = top + index * ROW_HEIGHT;
    parts.push(
      `<rect class="row-band${index % 2 ? ' odd' : ''}" data-step-id="${escapeHtml(detail.id)}" x="0" y="${y}" width="${width}" height="${ROW_HEIGHT}"/>`,
      `<text class="row-label${detail.onCriticalPath ? ' critical' : ''}" data-step-id="${escapeHtml(detail.id)}" x="8" y="${y + 16}">${escapeHtml(truncate(detail.id, 26))}</text>`,
    );
  });
  for (const resume of model.resumes) {
    const x = LABEL_WIDTH + resume.at * scale;
    parts.push(
      `<g class="resume"><line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${top}" y2="${height - 8}"/><text x="${(x + 4).toFixed(1)}" y="${top + 10}">resumed</text></g>`,
    );
  }
  for (const wait of model.waits) {
    const row = rows.get(wait.stepId);
    if (row === undefined) continue;
    const x = LABEL_WIDTH + wait.start * scale;
    const waitWidth = Math.max(3, (wait.end - wait.start) * scale);
    const y = top + row * ROW_HEIGHT + 6;
    const title = `${wait.stepId} waited for a person ${formatDuration(wait.end - wait.start)}${wait.open ? ' (still waiting)' : ''} from +${formatDuration(wait.start)}`;
    parts.push(
      `<rect class="wait${wait.open ? ' open' : ''}" data-step-id="${escapeHtml(wait.stepId)}" data-waiting-ms="${Math.round(wait.end - wait.start)}" x="${x.toFixed(1)}" y="${y}" width="${waitWidth.toFixed(1)}" height="${ROW_HEIGHT - 12}" rx="2"><title>${escapeHtml(title)}</title></rect>`,
    );
  }
  for (const bar of model.bars) {
    const row = rows.get(bar.stepId);
    if (row === undefined) continue;
    const x = LABEL_WIDTH + bar.start * scale;
    const barWidth = Math.max(3, (bar.end - bar.start) * scale);
    const y = top + row * ROW_HEIGHT + 4;
    const waited = bar.waitingMs > 0 ? ` (${formatDuration(bar.waitingMs)} of it waiting for a person)` : '';
    const title = `${bar.stepId} attempt ${bar.attempt}: ${bar.status}, ${formatDuration(bar.end - bar.start)}${waited} from +${formatDuration(bar.start)}${bar.error ? ` — ${bar.error.code} ${bar.error.message}` : ''}${bar.critical ? ' (critical path)' : ''}`;
    parts.push(
      `<rect class="bar status-${bar.status}${bar.critical ? ' critical' : ''}" data-step-id="${escapeHtml(bar.stepId)}" data-execution-id="${escapeHtml(bar.executionId)}" data-attempt="${bar.attempt}" x="${x.toFixed(1)}" y="${y}" width="${barWidth.toFixed(1)}" height="${ROW_HEIGHT - 8}" rx="3"><title>${escapeHtml(title)}</title></rect>`,
    );
    if (barWidth > 26) {
      parts.push(`<text class="attempt-label" x="${(x + 4).toFixed(1)}" y="${y + 12}">#${bar.attempt}</text>`);
    }
  }
  for (const call of model.calls) {
    const row = rows.get(call.stepId);
    if (row === undefined) continue;
    const x = LABEL_WIDTH + call.start * scale;
    const callWidth = Math.max(2, (call.end - call.start) * scale);
    const y = top + (row + 1) * ROW_HEIGHT - 4;
    parts.push(
      `<rect class="call status-${escapeHtml(call.status)}" data-step-id="${escapeHtml(call.stepId)}" x="${x.toFixed(1)}" y="${y}" width="${callWidth.toFixed(1)}" height="3"><title>${escapeHtml(`${call.tool}${call.turn === undefined ? '' : ` (turn ${call.turn})`}: ${call.status}, ${formatDuration(call.end - call.start)}`)}</title></rect>`,
    );
  }
  return `<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="timeline of executions">${WAITING_HATCH}${parts.join('')}</svg>`;
}

function renderStepTable(model: ReportModel): string {
  const rows = model.steps.map((step) => {
    const attempts = model.bars.filter((bar) => bar.stepId === step.id).length;
    const error = step.result?.error ? `${step.result.error.code} ${step.result.error.message}` : '';
    return `<tr data-step-id="${escapeHtml(step.id)}" tabindex="0"><td class="mono">${escapeHtml(step.id)}</td><td class="mono">${escapeHtml(step.tool ?? '')}</td><td><span class="badge status-${escapeHtml(step.status)}">${escapeHtml(step.status)}</span></td><td>${attempts}</td><td>${escapeHtml(stepTime(step))}</td><td>${escapeHtml(truncate(error, 120))}</td></tr>`;
  });
  return `<table id="steps"><thead><tr><th>step</th><th>tool</th><th>status</th><th>attempts</th><th>working time</th><th>error</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

const LEGEND = [
  ...['succeeded', 'failed', 'denied', 'skipped', 'cancelled', 'waiting', 'interrupted', 'running', 'pending'].map(
    (status) => `<span style="--swatch: var(--${status})">${status}</span>`,
  ),
  '<span class="waiting-swatch">waiting for a person (timeline)</span>',
].join('');

/** Graph zoom: the graph keeps its natural size (scrolling both ways) unless fitted or zoomed. */
const ZOOM_CONTROLS =
  '<div class="zoom" role="group" aria-label="graph zoom"><button type="button" data-zoom="out" aria-label="zoom out">−</button><button type="button" data-zoom="fit">fit</button><button type="button" data-zoom="reset">100%</button><button type="button" data-zoom="in" aria-label="zoom in">+</button></div>';

/** The header line naming the step a failed run is about, linked to its details. */
function renderFailure(step: StepDetail): string {
  const error = step.result?.error;
  return `<p class="failure" id="run-failure">Failed at step <a class="step-link mono" data-goto="${escapeHtml(step.id)}" href="#step=${encodeURIComponent(step.id)}">${escapeHtml(step.id)}</a>${step.tool ? ` (${escapeHtml(step.tool)})` : ''}${error ? `: ${escapeHtml(error.code)} ${escapeHtml(truncate(error.message, 200))}` : ''}</p>`;
}

/** Embeds JSON in a `<script>` safely: no `</script>`, no HTML comment openers, no line separators. */
export function embedJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** The whole report: one HTML document with inline CSS, SVG, data and script; no network. */
export function renderReport(model: ReportModel, options: { readonly generatedAt?: Date } = {}): string {
  const { run } = model;
  const counts = new Map<string, number>();
  for (const step of model.steps) counts.set(step.status, (counts.get(step.status) ?? 0) + 1);
  const countText = [...counts].map(([status, count]) => `${count} ${status}`).join(', ');
  const meta: [string, string | undefined][] = [
    ['run', run.runId],
    ['plan', run.planId],
    ['digest', run.planDigest.slice(0, 16)],
    ['engine', run.engine],
    ['started', run.createdAt],
    ['duration', formatDuration(run.durationMs ?? model.span)],
    ['steps', countText],
    ['executions', String(model.bars.length)],
    ['waiting for a person', model.waitingMs > 0 ? formatDuration(model.waitingMs) : undefined],
    ['tokens', run.usage ? String(run.usage.totalTokens) : undefined],
    ['approved by', run.authorization?.by],
    ['critical path', model.criticalPath.join(' → ') || undefined],
  ];
  const metaHtml = meta
    .filter(([, value]) => value)
    .map(([name, value]) => `<div><dt>${escapeHtml(name)}</dt><dd>${escapeHtml(value)}</dd></div>`)
    .join('');
  const title = run.goal ? run.goal : run.planId;
  const failing = model.steps.find((step) => step.id === model.failingStepId);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>Stepwise · ${escapeHtml(title)} · ${escapeHtml(run.status)}${failing ? ` at ${escapeHtml(failing.id)}` : ''}</title>
<style>${REPORT_STYLE}</style>
</head>
<body>
<header>
<h1>${escapeHtml(title)} <span class="badge status-${escapeHtml(run.status)}" id="run-status">${escapeHtml(run.status)}</span></h1>
${failing ? renderFailure(failing) : ''}<p class="goal">Plan <span class="mono">${escapeHtml(run.planId)}</span> run by the ${escapeHtml(run.engine)} engine. Click a step for its arguments, output, errors, approvals and model turns.</p>
<dl class="meta">${metaHtml}</dl>
</header>
<div class="layout">
<main>
<section id="graph-section"><h2>Plan graph</h2><div class="legend">${LEGEND}<span style="--swatch: var(--critical)">critical path (thick outline)</span></div>${ZOOM_CONTROLS}<div class="scroll" id="graph-scroll">${renderDag(model)}</div></section>
<section id="timeline-section"><h2>Timeline <small>(one bar per execution; retries are separate bars in the same row; hatched: waiting for a person)</small></h2><div class="scroll">${renderTimeline(model)}</div></section>
<section id="steps-section"><h2>Steps</h2>${renderStepTable(model)}</section>
${renderHistory(model)}
</main>
<aside id="details" aria-live="polite"><h2>Step details</h2><p class="empty">Select a step in the graph, the timeline or the table.</p></aside>
</div>
<footer>Generated by stepwise report${options.generatedAt ? ` on ${escapeHtml(options.generatedAt.toISOString())}` : ''} from ${model.eventCount} journal events.</footer>
<script type="application/json" id="stepwise-data">${embedJson({ run: model.run, steps: model.steps, bars: model.bars, criticalPath: model.criticalPath, waits: model.waits, waitingMs: model.waitingMs, failingStepId: model.failingStepId, span: model.span })}</script>
<script>${REPORT_SCRIPT}</script>
</body>
</html>
`;
}

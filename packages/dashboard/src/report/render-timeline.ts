import { escapeHtml, truncate } from './escape-html.js';
import { formatDuration } from './format-duration.js';
import type { ReportModel } from './report-model.js';

const ROW_HEIGHT = 24;
const LABEL_WIDTH = 170;
const TIMELINE_WIDTH = 640;

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

/** The timeline as SVG: one row per step, one bar per attempt, waits hatched, resumes marked. */
export function renderTimeline(model: ReportModel): string {
  // A loop, not a spread: a spread of 100,000 bars overflows the call stack.
  let span = Math.max(model.span, 1);
  for (const bar of model.bars) if (bar.end > span) span = bar.end;
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

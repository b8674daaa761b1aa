import { escapeHtml, truncate } from './escape-html.js';
import { formatDuration } from './format-duration.js';
import { layoutDag } from './layout-dag.js';
import type { ReportModel } from './report-model.js';

const NODE_WIDTH = 176;
const NODE_HEIGHT = 46;

/** The plan's graph as SVG: one node per step (status strip, tool, working time), the critical path outlined. */
export function renderDag(model: ReportModel): string {
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

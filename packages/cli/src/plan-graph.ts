import type { Plan } from '@stepwise/core';

/** `stepwise graph` output formats. */
export type GraphFormat = 'mermaid' | 'dot';

function quoteDot(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

function mermaidLabel(text: string): string {
  // Mermaid labels in quotes may not contain a double quote; use its HTML entity.
  return text.replace(/"/g, '#quot;').replace(/\n/g, ' ');
}

/** A Mermaid flowchart: nodes are `n<index>` because step ids may contain `.` and `:`. */
export function planToMermaid(plan: Plan): string {
  const ids = new Map(plan.steps.map((step, index) => [step.id, `n${index}`]));
  const lines = ['flowchart TD'];
  for (const step of plan.steps) {
    const label = step.tool ? `${step.id}<br/><small>${step.tool}</small>` : step.id;
    lines.push(`  ${ids.get(step.id)}["${mermaidLabel(label)}"]`);
  }
  for (const step of plan.steps) {
    for (const dependency of step.dependsOn ?? []) {
      const from = ids.get(dependency);
      if (from) lines.push(`  ${from} --> ${ids.get(step.id)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** A Graphviz digraph, left to right. */
export function planToDot(plan: Plan): string {
  const lines = [`digraph ${quoteDot(plan.id)} {`, '  rankdir=LR;', '  node [shape=box, style=rounded];'];
  for (const step of plan.steps) {
    const label = step.tool ? `${step.id}\n${step.tool}` : step.id;
    lines.push(`  ${quoteDot(step.id)} [label=${quoteDot(label)}];`);
  }
  const known = new Set(plan.steps.map((step) => step.id));
  for (const step of plan.steps) {
    for (const dependency of step.dependsOn ?? []) {
      if (known.has(dependency)) lines.push(`  ${quoteDot(dependency)} -> ${quoteDot(step.id)};`);
    }
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

export function planToGraph(plan: Plan, format: GraphFormat): string {
  return format === 'dot' ? planToDot(plan) : planToMermaid(plan);
}

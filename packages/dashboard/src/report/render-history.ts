import { escapeHtml } from './escape-html.js';
import { type AttemptEntry, describeValidation, type RevisionEntry } from './run-history.js';

function revisionTable(revisions: readonly RevisionEntry[]): string {
  const rows = revisions.map(
    (entry) =>
      `<tr><td>${entry.revision}</td><td>${escapeHtml(entry.by)}${entry.approvedBy ? ` (approved by ${escapeHtml(entry.approvedBy)})` : ''}</td><td class="mono">${escapeHtml(entry.at)}</td><td class="mono">${entry.changes.map(escapeHtml).join('<br>')}</td><td>${escapeHtml(entry.reason ?? '')}</td></tr>`,
  );
  return `<table id="revisions"><thead><tr><th>revision</th><th>by</th><th>at</th><th>changes</th><th>reason</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function attemptRow(entry: AttemptEntry): string {
  const changed = [...entry.changes.modified, ...entry.changes.created, ...entry.changes.deleted];
  const validation = entry.validation;
  const failing = (validation?.failingTests ?? []).map((test) => escapeHtml(test.name)).join('<br>');
  const rollback = entry.rollback
    ? [
        ...entry.rollback.restored.map((file) => `restored ${file}`),
        ...entry.rollback.removed.map((file) => `removed ${file}`),
      ]
        .map(escapeHtml)
        .join('<br>') || 'nothing had changed'
    : '';
  const output = validation?.output
    ? `<details><summary>output</summary><pre>${escapeHtml(validation.output)}</pre></details>`
    : '';
  const status = validation?.passed ? 'succeeded' : 'failed';
  return `<tr data-step-id="${escapeHtml(entry.stepId)}"><td class="mono">${escapeHtml(entry.stepId)}</td><td>${entry.attempt}</td><td>${escapeHtml(entry.status)}${entry.error ? `: ${escapeHtml(entry.error)}` : ''}<br><span class="mono">${escapeHtml(entry.implementationRunId)}</span></td><td class="mono">${escapeHtml(changed.join(', '))}</td><td><span class="badge status-${status}">${escapeHtml(validation ? describeValidation(validation) : 'not validated')}</span>${output}</td><td>${failing}</td><td>${rollback}</td></tr>`;
}

/** The report's sections for a revised plan and for a code agent's attempts; empty when the run has neither. */
export function renderHistory(model: {
  readonly revisions: readonly RevisionEntry[];
  readonly attempts: readonly AttemptEntry[];
}): string {
  const sections: string[] = [];
  if (model.revisions.length > 0) {
    sections.push(`<section id="revisions-section"><h2>Plan revisions</h2>${revisionTable(model.revisions)}</section>`);
  }
  if (model.attempts.length > 0) {
    sections.push(
      `<section id="attempts-section"><h2>Attempts <small>(validated after each; a failed attempt is rolled back)</small></h2><table id="attempts"><thead><tr><th>step</th><th>attempt</th><th>implementation</th><th>changed</th><th>validation</th><th>failing tests</th><th>rollback</th></tr></thead><tbody>${model.attempts.map(attemptRow).join('')}</tbody></table></section>`,
    );
  }
  return sections.join('\n');
}

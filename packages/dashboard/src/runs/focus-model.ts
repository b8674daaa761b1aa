import type { ReportModel } from '../report/report-model.js';

/**
 * How many steps a live run page draws. A larger run's page shows the steps that matter now;
 * drawing all of a 10,000-step run took the browser tens of seconds per update.
 */
export const LIVE_PAGE_STEPS = 1000;

/** Statuses a person watching a run looks for first. */
const ACTIVE = new Set(['running', 'retrying', 'waiting', 'awaiting-approval', 'failed', 'denied', 'interrupted']);

/**
 * The report model cut to `limit` steps, in plan order: those running, waiting or failed first, then
 * the latest to finish, then the next pending ones. Bars, tool calls and waits follow their steps;
 * the run's figures (counts, duration, critical path) stay those of the whole run.
 */
export function focusModel(model: ReportModel, limit = LIVE_PAGE_STEPS): { model: ReportModel; hidden: number } {
  if (model.steps.length <= limit) return { model, hidden: 0 };
  const lastEnd = new Map<string, number>();
  for (const bar of model.bars) lastEnd.set(bar.stepId, Math.max(lastEnd.get(bar.stepId) ?? 0, bar.end));
  const active = model.steps.filter((step) => ACTIVE.has(step.status));
  const finished = model.steps
    .filter((step) => !ACTIVE.has(step.status) && step.status !== 'pending')
    .sort((a, b) => (lastEnd.get(b.id) ?? 0) - (lastEnd.get(a.id) ?? 0));
  const pending = model.steps.filter((step) => step.status === 'pending');
  const chosen = new Set([...active, ...finished, ...pending].slice(0, limit).map((step) => step.id));
  return {
    model: {
      ...model,
      steps: model.steps.filter((step) => chosen.has(step.id)),
      bars: model.bars.filter((bar) => chosen.has(bar.stepId)),
      calls: model.calls.filter((call) => chosen.has(call.stepId)),
      waits: model.waits.filter((wait) => chosen.has(wait.stepId)),
      whole: { stepStatuses: model.steps.map((step) => step.status), executions: model.bars.length },
    },
    hidden: model.steps.length - chosen.size,
  };
}

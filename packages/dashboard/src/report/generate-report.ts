import { ErrorCodes, type RunStore, readAll, StepwiseError } from '@stepwise/core';
import { renderReport } from './render-report.js';
import { buildReportModel } from './report-model.js';

/**
 * The self-contained HTML report of one run, read through the RunStore contract (any store).
 * Throws E505 when the store has no such run.
 */
export async function generateReport(store: RunStore, runId: string): Promise<string> {
  const events = await readAll(store, runId);
  if (events.length === 0) {
    throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} is not in the store`, { location: runId });
  }
  return renderReport(buildReportModel(events), { generatedAt: new Date() });
}

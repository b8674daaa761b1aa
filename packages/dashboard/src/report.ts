/**
 * `@stepwise/dashboard/report`: the run report's model and renderer, shared by the static report
 * (`stepwise report`) and the live dashboard, and the helpers the command line's views use too.
 */

export { embedJson, escapeHtml } from './report/escape-html.js';
export { formatDuration } from './report/format-duration.js';
export { generateReport } from './report/generate-report.js';
export { goalProgressLine } from './report/goal-progress-line.js';
export {
  type DagLayout,
  type LayoutEdge,
  type LayoutNode,
  type LayoutOptions,
  layoutDag,
} from './report/layout-dag.js';
export { renderDag } from './report/render-graph.js';
export { renderHistory } from './report/render-history.js';
export {
  DETAILS_PANEL,
  type ReportData,
  type ReportParts,
  renderReport,
  renderReportSections,
  reportData,
  reportParts,
} from './report/render-report.js';
export { renderTimeline } from './report/render-timeline.js';
export { goalProgressByStep } from './report/report-goal-progress.js';
export {
  buildReportModel,
  type CallMark,
  capStrings,
  criticalPath,
  type ExecutionBar,
  failingStepOf,
  type ReportModel,
  type StepDetail,
  type ToolCallDetail,
} from './report/report-model.js';
export { REPORT_SCRIPT } from './report/report-script.js';
export { REPORT_STYLE } from './report/report-style.js';
export {
  type AttemptEndRecord,
  type AttemptEntry,
  attemptHistory,
  describeChange,
  describeValidation,
  type FailingTestRecord,
  type RevisionEntry,
  revisionHistory,
  type ValidationEndRecord,
  type WorkspaceChangeList,
  type WorkspaceRollbackRecord,
} from './report/run-history.js';
export { type RunTimings, type StepTiming, stepTimings, type WaitSpan } from './report/step-timing.js';

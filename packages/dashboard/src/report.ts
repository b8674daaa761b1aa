/**
 * `@stepwise/dashboard/report`: the run report's model and renderer, shared by the static report
 * (`stepwise report`) and the live dashboard, and the helpers the command line's views use too.
 */
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
export { embedJson, escapeHtml, renderReport } from './report/render-report.js';
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
export {
  type AttemptEntry,
  attemptHistory,
  describeChange,
  describeValidation,
  type RevisionEntry,
  revisionHistory,
} from './report/run-history.js';
export { type RunTimings, type StepTiming, stepTimings, type WaitSpan } from './report/step-timing.js';

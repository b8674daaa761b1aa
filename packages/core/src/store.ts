// @stepwise/core/store: what store authors build on — the parts of the RunStore contract a host does
// not touch (leases, approval records), the checks every store applies to an append, the one fold
// (applyEvent, foldRun, FoldChanges) that projections are written from, the journal's format version
// and the interface of every event. The conformance suite is in @stepwise/core/testing/vitest.
// `cancelRun` is here too: it works on a store's runs from outside the process that runs them, and
// the host entry (@stepwise/core) is at its limit of names.
export type {
  AdjustDecisionEvent,
  ApprovalDecisionEvent,
  ApprovalRequestEvent,
  ApprovalResponseEvent,
  CoreRunEvent,
  CriterionStatus,
  ExtensionEvent,
  GoalProgressEvent,
  GoalStatus,
  LimitReachEvent,
  ModelCallEvent,
  PlanReviseEvent,
  ProcessKillEvent,
  ProcessStartEvent,
  ProgressReportEvent,
  QuestionAskEvent,
  RecoveryDecisionEvent,
  RunContinueEvent,
  RunEndEvent,
  RunResumeEvent,
  RunStartEvent,
  StepEndEvent,
  StepRetryEvent,
  StepStartEvent,
  ToolCallEvent,
  ToolResultEvent,
} from './journal/events.js';
export { FoldChanges } from './journal/fold-changes.js';
export {
  applyEvent,
  type ExecutionState,
  emptyRun,
  executionRecord,
  exitCodeOf,
  type FoldedRun,
  foldRun,
  type QuestionRecord,
  type StepState,
  summarizeRun,
} from './journal/fold-run.js';
export { JOURNAL_VERSION } from './journal/journal-version.js';
export { LIVE_OUTPUT_PUBLISH_MS, LIVE_OUTPUT_TAIL_CHARS } from './journal/live-output-publisher.js';
export {
  type ApprovalRecord,
  type CancelRequest,
  type Lease,
  type LiveOutputTail,
  searchWords,
} from './journal/run-store.js';
export { sha256 } from './plan/plan-digest.js';
export { type CancelOutcome, type CancelRunOptions, cancelRun } from './run/cancel-run.js';
export { type ApprovalState, approvalState } from './run/pending-approvals.js';
export { checkEvents } from './store/check-events.js';
export {
  checkBatch,
  checkCancelRequest,
  checkLease,
  checkLeaseRequest,
  checkLiveOutputTail,
} from './store/memory-store.js';

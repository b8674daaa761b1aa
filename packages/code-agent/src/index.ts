// What `stepwise solve` and `stepwise plan` build the configured endpoint's model with: from this
// package's own dependency, so the cli needs no `@stepwise/engine-agentic` of its own to find.
export { type OpenAICompatibleOptions, openAICompatible } from '@stepwise/engine-agentic';
export { attemptFeedback, type FailedAttempt, type ValidationSummary } from './attempt-feedback.js';
export { IMPLEMENTATION_TOOLS } from './code-agent-attempt.js';
export type {
  AttemptEndEvent,
  CodeAgentEvents,
  FailingTestRecord,
  ValidationEndEvent,
  WorkspaceChangeList,
  WorkspaceCheckpointEvent,
  WorkspaceRollbackEvent,
} from './code-agent-events.js';
export { type ValidationCommand, type ValidationResult, validationCommands } from './run-validation.js';
export {
  type PlanTaskOptions,
  planTask,
  type ResumeSolveOptions,
  resumeSolve,
  type SolveEvent,
  type SolveHostOptions,
  type SolveModel,
  type SolveOptions,
  solve,
} from './solve.js';
export { SOLVE_ENGINE, type SolveCheckpointOptions } from './solve-engine.js';
export type { SolveAttempt, SolveResult, SolveStepSummary } from './solve-result.js';
export { DEFAULT_CHECKPOINT_EXCLUDE } from './workspace-transaction.js';

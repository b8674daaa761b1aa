export {
  type CustomErrorCode,
  type ErrorCode,
  ErrorCodes,
  isLeaseConflict,
  isStoreError,
  SandboxViolation,
  type StepError,
  StepwiseError,
  type StepwiseErrorOptions,
  type StoreErrorCode,
  ToolError,
  toStepError,
} from './errors.js';
export { applyPlanRevise, planReviseEvent, startedStepIds } from './journal/apply-plan-revise.js';
export * from './journal/code-agent-events.js';
export * from './journal/events.js';
export { FoldChanges } from './journal/fold-changes.js';
export {
  addUsage,
  applyEvent,
  type ExecutionState,
  emptyRun,
  executionRecord,
  exitCodeOf,
  type FoldedRun,
  foldRun,
  inFlightSteps,
  type QuestionRecord,
  type StepState,
  summarizeRun,
} from './journal/fold-run.js';
export {
  BATCHED_EVENTS_MAX,
  BATCHED_WAIT_MAX_MS,
  type Durability,
  type EventListener,
  isoNow,
  RunJournal,
  type RunJournalOptions,
} from './journal/journal.js';
export { checkJournalVersion, JOURNAL_VERSION, journalVersionOf } from './journal/journal-version.js';
export {
  createRedactor,
  MAX_REDACTION_DEPTH,
  REDACTED,
  type Redactor,
  type RedactorOptions,
  redact,
  secretForms,
} from './journal/redact.js';
export {
  type ApprovalRecord,
  type ExecutionRecord,
  type Lease,
  type RunFilter,
  type RunState,
  type RunStore,
  type RunSummary,
  readAll,
} from './journal/run-store.js';
export {
  type ApprovalDecision,
  type ApprovalHandler,
  type ApprovalMode,
  type ApprovalOptions,
  type ApprovalPolicy,
  type ApprovalRequest,
  approvalModeFor,
  DEFAULT_EFFECT_MODES,
} from './kernel/approval.js';
export {
  callTool,
  endStep,
  invokeStep,
  type KernelContext,
  type StepInvocation,
  type ToolCallOutcome,
  type ToolCallRequest,
} from './kernel/invoke-step.js';
export { type JournaledAnswers, waitingError } from './kernel/pause-approval.js';
export { signalWithTimeout, type TimedSignal } from './kernel/signal-with-timeout.js';
export { cancelledError } from './kernel/tool-execution.js';
export { backoffDelay, DEFAULT_RETRY, isRetryable, sleep } from './plan/backoff.js';
export { closestName, didYouMean } from './plan/did-you-mean.js';
export {
  createJsonLocator,
  describeJsonSyntaxError,
  findJsonSyntaxError,
  type JsonSyntaxError,
  locateJsonPointer,
  positionAt,
  type TextPosition,
} from './plan/json-error-location.js';
export { MAX_NESTING_DEPTH } from './plan/nesting-depth.js';
export { diffPlans, type PlanChange, type PlanDiff } from './plan/plan-diff.js';
export {
  approvePlan,
  canonicalJson,
  deriveExecutionId,
  deriveRunId,
  newRunId,
  type PlanAuthorization,
  planDigest,
  sha256,
  verifyAuthorization,
} from './plan/plan-digest.js';
export { planGenerations, planGraph } from './plan/plan-graph.js';
export {
  PLAN_REVISION_CONFLICT,
  type PlanEdit,
  type PlanRevision,
  type RevisePlanOptions,
  replaceRemainingSteps,
  revisePlan,
} from './plan/plan-revision.js';
export {
  type Expectation,
  ExpectationSchema,
  type Plan,
  PlanSchema,
  type Precondition,
  PreconditionSchema,
  planJsonSchema,
  type RetryPolicy,
  RetryPolicySchema,
  type Step,
  StepIdSchema,
  StepSchema,
} from './plan/plan-schema.js';
export {
  findReferences,
  type Reference,
  readPointer,
  resolveReferences,
  toJsonPath,
} from './plan/references.js';
export { type SchemaIssueProblem, schemaIssueProblems } from './plan/schema-issue-problems.js';
export {
  type EngineKind,
  type PlanProblem,
  type PlanValidation,
  type ProblemKind,
  type ProblemRedactor,
  parsePlan,
  planInvalidError,
  type ValidatePlanOptions,
  validatePlan,
} from './plan/validate-plan.js';
export type {
  Engine,
  EngineOptions,
  ResumeOptions,
  RetainOutputs,
  RunOptions,
} from './run/engine-options.js';
export {
  type ApprovalState,
  approvalState,
  type PendingApproval,
  type PendingQuestion,
  type PendingToolApproval,
} from './run/pending-approvals.js';
export { type ApprovalAnswer, pendingApprovals, respond } from './run/respond.js';
export { createLazyRunHandle, createRunHandle, type RunHandle } from './run/run-handle.js';
export {
  finishRun,
  type InterruptedAction,
  interruptedAction,
  interruptedError,
  type ResumedRun,
  reopenRun,
  resultFromFold,
  type SessionOptions,
  type StartRunOptions,
  startRun,
  stepResults,
} from './run/run-session.js';
export { buildDependencyGraph, type DependencyGraph } from './scheduler/dependency-graph.js';
export type {
  EnginePolicy,
  GoalStepExecutor,
  GoalStepRequest,
  ProgressRunHandle,
  RecoveryContext,
  RecoveryDecision,
  RecoveryHook,
  RevisionRequest,
  RunProgress,
  SchedulerObserver,
  SchedulerStepStatus,
} from './scheduler/engine-policy.js';
export { TURN_EVERY_MS } from './scheduler/event-loop-turn.js';
export {
  type AdjustContext,
  type AdjustDecision,
  type AdjustHook,
  normalizeAdjustDecision,
} from './scheduler/policies/adjust-hook.js';
export {
  DEFAULT_CONCURRENCY,
  journaledPolicy,
  type PermissivePolicy,
  type PermissivePolicyOptions,
  permissivePolicy,
  policyFromJournal,
} from './scheduler/policies/permissive-policy.js';
export { normalizeDecision } from './scheduler/policies/recovery-decision.js';
export {
  createPolicyEngine,
  type PolicyEngine,
  type PolicyEngineSetup,
  type SessionHooks,
  type SessionOpened,
} from './scheduler/policy-engine.js';
export { type RestoredStep, type ResumeState, restoreSteps } from './scheduler/resume-state.js';
export { RunScheduler, type RunSchedulerInit } from './scheduler/run-scheduler.js';
export {
  blocksDependents,
  dependencyError,
  describeOutcome,
  isWaiting,
  letsDependentsRun,
} from './scheduler/step-outcome.js';
export { checkEvents } from './store/check-events.js';
export { checkBatch, checkLease, checkLeaseRequest, MemoryStore } from './store/memory-store.js';
export {
  checkRequestedEnvironment,
  inheritEnvironment,
  matchesEnvironmentName,
  PLAN_DENIED_ENVIRONMENT,
  secretEnvironmentValues,
} from './tools/child-environment.js';
export {
  type Artifact,
  type ArtifactKind,
  defineTool,
  type Effect,
  type ProcessRecord,
  type ToolContext,
  type ToolDefinition,
  type ToolLogger,
  type ToolOptions,
} from './tools/define-tool.js';
export {
  type BubblewrapFeatures,
  bubblewrapArguments,
  bubblewrapProbeArguments,
  CONFIG_FILE_PATTERN,
  DEFAULT_PROTECTED_DIRECTORY,
  type OsSandboxOptions,
  protectedPathsOf,
  SANDBOX_HOME,
  SANDBOX_UNPRIVILEGED_ID,
  type SandboxedProcess,
  SQLITE_SIDE_FILES,
  sandboxEnvironment,
} from './tools/os-sandbox-arguments.js';
export {
  type PreconditionChecker,
  type PreconditionContext,
  type PreconditionEntry,
  type PreconditionOutcome,
  PreconditionRegistry,
} from './tools/preconditions.js';
export {
  describeProcess,
  killOrphanedProcesses,
  type OrphanedProcesses,
  type ProcessLeft,
  type ProcessLeftReason,
  type RecordedProcess,
} from './tools/process-groups.js';
export {
  type CompiledSchema,
  compileSchema,
  formatIssues,
  type JsonSchema,
  type SchemaIssue,
  type SchemaResult,
  type ToolSchema,
} from './tools/schema.js';
export {
  type AnyTool,
  definePlugin,
  type FunctionDefinition,
  type Plugin,
  type PluginContext,
  type ToolCatalog,
  ToolRegistry,
  type UseOptions,
} from './tools/tool-registry.js';

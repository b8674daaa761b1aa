// @stepwise/core: what a host application imports — plans and their validation, tools and the
// registry, engine options and the engine interface, run handles, results and events, errors,
// approvals and answering a waiting run, the store contract a host passes in and MemoryStore.
// Engine and executor authors import @stepwise/core/engine; store authors @stepwise/core/store
// (packages/core/api/ lists each entry's names; `npm run api:update` rewrites those lists).
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
} from './errors.js';
export {
  type RunEvent,
  type RunEventBase,
  type RunEventExtensions,
  type RunEventType,
  type RunResult,
  type RunStatus,
  type StepResult,
  type StepStatus,
  serializeEvent,
  type TokenUsage,
} from './journal/events.js';
export type { Durability } from './journal/journal.js';
export type { JournalKey } from './journal/journal-chain.js';
export { journalTamperedError } from './journal/journal-tampered-error.js';
export type { LiveEvent } from './journal/live-output.js';
export { readVerifiedJournal } from './journal/read-verified-journal.js';
export { createRedactor, type Redactor, type RedactorOptions } from './journal/redact.js';
export {
  type ExecutionRecord,
  type RunFilter,
  type RunState,
  type RunStore,
  type RunSummary,
  readAll,
} from './journal/run-store.js';
export { type JournalVerification, verifyJournal } from './journal/verify-journal.js';
export { type RunVerification, verifyRun } from './journal/verify-run.js';
export type {
  ApprovalDecision,
  ApprovalHandler,
  ApprovalMode,
  ApprovalOptions,
  ApprovalPolicy,
  ApprovalRequest,
} from './kernel/approval.js';
export { createJsonLocator, describeJsonSyntaxError, findJsonSyntaxError } from './plan/json-error-location.js';
export { diffPlans, type PlanChange, type PlanDiff } from './plan/plan-diff.js';
export { approvePlan, type PlanAuthorization, planDigest, verifyAuthorization } from './plan/plan-digest.js';
export {
  type PlanEdit,
  type PlanRevision,
  type RevisePlanOptions,
  replaceRemainingSteps,
  revisePlan,
} from './plan/plan-revision.js';
export {
  type Expectation,
  type Plan,
  PlanSchema,
  type Precondition,
  planJsonSchema,
  type RetryPolicy,
  RetryPolicySchema,
  type Step,
  StepSchema,
} from './plan/plan-schema.js';
export {
  type EngineKind,
  type PlanProblem,
  type PlanValidation,
  type ProblemKind,
  parsePlan,
  type ValidatePlanOptions,
  validatePlan,
} from './plan/validate-plan.js';
export type { Engine, EngineOptions, ResumeOptions, RetainOutputs, RunOptions } from './run/engine-options.js';
export type { PendingApproval, PendingQuestion, PendingToolApproval } from './run/pending-approvals.js';
export { type ApprovalAnswer, pendingApprovals, type RespondOptions, respond } from './run/respond.js';
export type { RunHandle } from './run/run-handle.js';
export type { RecoveryContext, RecoveryDecision, RecoveryHook } from './scheduler/engine-policy.js';
export type { AdjustContext, AdjustDecision, AdjustHook } from './scheduler/policies/adjust-hook.js';
export { MemoryStore } from './store/memory-store.js';
export {
  type Artifact,
  defineTool,
  type Effect,
  type ReconcileContext,
  type Reconciliation,
  type ToolClaim,
  type ToolClaimContext,
  type ToolContext,
  type ToolDefinition,
  type ToolLogger,
  type ToolOptions,
} from './tools/define-tool.js';
export type {
  PreconditionChecker,
  PreconditionContext,
  PreconditionEntry,
  PreconditionOutcome,
} from './tools/preconditions.js';
export type { JsonSchema, ToolSchema } from './tools/schema.js';
export {
  type AnyTool,
  definePlugin,
  type FunctionDefinition,
  type Plugin,
  type PluginContext,
  ToolRegistry,
  type UseOptions,
} from './tools/tool-registry.js';

// @stepwise/core/engine: what engine and executor authors build on — the one scheduler and the run
// lifecycle (createPolicyEngine), the policies, the step kernel (invokeStep, callTool), sessions and
// the journal writer (RunJournal), and the helpers engines and tool packages share (the OS sandbox's
// arguments, the child environment). Hosts import @stepwise/core.
export { messageOf, toStepError } from './errors.js';
export { addUsage } from './journal/add-usage.js';
export { planReviseEvent, startedStepIds } from './journal/apply-plan-revise.js';
export type { RunEventInput } from './journal/events.js';
export {
  BATCHED_EVENTS_MAX,
  BATCHED_WAIT_MAX_MS,
  type EventListener,
  isoNow,
  RunJournal,
  type RunJournalOptions,
} from './journal/journal.js';
export {
  LIVE_OUTPUT_MAX_CHARS,
  type LiveListener,
  LiveOutput,
  type ModelDeltaEvent,
  type ToolOutputEvent,
} from './journal/live-output.js';
export { REDACTED, redact, secretForms } from './journal/redact.js';
export { StreamRedactor, type StreamRedactorOptions } from './journal/stream-redactor.js';
export {
  callTool,
  endStep,
  invokeStep,
  type KernelContext,
  type StepInvocation,
  type ToolCallOutcome,
  type ToolCallRequest,
} from './kernel/invoke-step.js';
export { signalWithTimeout, type TimedSignal } from './kernel/signal-with-timeout.js';
export { cancelledError } from './kernel/tool-execution.js';
export { backoffDelay, DEFAULT_RETRY, sleep } from './plan/backoff.js';
export { canonicalJson, deriveExecutionId, deriveRunId, newRunId } from './plan/plan-digest.js';
export { schemaIssueProblems } from './plan/schema-issue-problems.js';
export { type ProblemRedactor, planInvalidError } from './plan/validate-plan.js';
export { createLazyRunHandle } from './run/run-handle.js';
export {
  finishRun,
  type ResumedRun,
  reopenRun,
  resultFromFold,
  type SessionOptions,
  type StartRunOptions,
  startRun,
} from './run/run-session.js';
export { buildDependencyGraph, type DependencyGraph } from './scheduler/dependency-graph.js';
export type {
  EnginePolicy,
  GoalStepExecutor,
  GoalStepRequest,
  ProgressRunHandle,
  RevisionRequest,
  RunProgress,
  SchedulerObserver,
  SchedulerStepStatus,
} from './scheduler/engine-policy.js';
export { TURN_EVERY_MS } from './scheduler/event-loop-turn.js';
export { normalizeAdjustDecision } from './scheduler/policies/adjust-hook.js';
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
export { RunScheduler, type RunSchedulerInit } from './scheduler/run-scheduler.js';
export type { CheckedPlan } from './scheduler/validated-plans.js';
export { checkRequestedEnvironment, inheritEnvironment, secretEnvironmentValues } from './tools/child-environment.js';
export {
  type BubblewrapFeatures,
  bubblewrapArguments,
  bubblewrapProbeArguments,
  CONFIG_FILE_PATTERN,
  type OsSandboxOptions,
  protectedPathsOf,
  SANDBOX_HOME,
  type SandboxedProcess,
  SQLITE_SIDE_FILES,
  sandboxEnvironment,
} from './tools/os-sandbox-arguments.js';
export { compileSchema } from './tools/schema.js';

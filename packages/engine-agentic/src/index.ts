export { type AgenticEngine, type AgenticEngineOptions, agenticEngine } from './agentic-engine.js';
export {
  builtInToolDefinitions,
  COMPLETE_STEP,
  type CompleteStepArguments,
  type GoalProgress,
  REPORT_BLOCKED,
} from './built-in-tools.js';
export type {
  ChatMessage,
  ChatModel,
  ChatRequest,
  ChatResponse,
  ChatToolCall,
  FinishReason,
  ToolChoice,
} from './chat-model.js';
export {
  type ContextWindowOptions,
  type FittedContext,
  fitContext,
  messageTokens,
  promptTokens,
  toolDefinitionTokens,
  truncateText,
} from './context-window.js';
export type { ExpectationChecker, ExpectationContext, ExpectationOutcome } from './expectations.js';
export { type AISDKLanguageModel, type FromAISDKOptions, fromAISDK } from './from-ai-sdk.js';
export { DEFAULT_MODEL_RETRY, type ModelRetryOptions } from './generate-with-retry.js';
export type { GoalAttemptHooks, GoalAttemptOutcome, GoalAttemptStart } from './goal-attempt-hooks.js';
export type { CommandToolOptions } from './goal-step.js';
export {
  type AgenticLimits,
  DEFAULT_LIMITS,
  type GoalStepExecutorOptions,
  goalStepExecutor,
} from './goal-step-executor.js';
export { isTransientStatus, ModelError, type ModelErrorOptions, parseRetryAfter } from './model-error.js';
export {
  type OpenAICompatibleOptions,
  openAICompatible,
  parseChatCompletion,
  parseToolArguments,
} from './openai-compatible.js';
export {
  ADJUST_PLAN,
  ADJUST_SYSTEM_PROMPT,
  type AdjustWithModelOptions,
  adjustWithModel,
} from './planner/adjust-with-model.js';
export {
  type PlanCheck,
  type PlanFromGoalOptions,
  type PlanFromGoalResult,
  type PlannerCall,
  planFromGoal,
  plannerCallEvent,
} from './planner/plan-from-goal.js';
export { PlannerError, PlannerErrorCodes } from './planner/planner-error.js';
export { PLANNER_SYSTEM_PROMPT, SUBMIT_PLAN } from './planner/planner-prompt.js';
export {
  type ReplanRemainingOptions,
  type ReplanRemainingResult,
  replanRemaining,
} from './planner/replan-remaining.js';
export { DEFAULT_SYSTEM_PROMPT } from './step-prompt.js';
export { heuristicEstimator, loadTokenEstimator, type TokenEstimator } from './token-estimator.js';

export { type ApprovedPlan, checkApprovedPlan } from './approved-plan.js';
export type {
  CompletedState,
  ExecutorState,
  ExecutorStatus,
  FailedState,
  IdleState,
  PlanLoadedState,
  StepRunningState,
} from './executor-state.js';
export { type SequentialEngine, sequentialEngine } from './sequential-engine.js';
export {
  createSequentialExecutor,
  type SequentialExecutor,
  type SequentialRunHandle,
} from './sequential-executor.js';
export type {
  SequentialEngineOptions,
  SequentialExecutorOptions,
  StepCallbacks,
  StepPosition,
} from './sequential-options.js';
export { STRICT_POLICY, strictEngine } from './strict-engine.js';

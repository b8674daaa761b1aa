export { type DagEngine, dagEngine } from './dag-engine.js';
export type {
  DagEngineOptions,
  DagProgress,
  DagRunHandle,
  DagStepStatus,
  RecoveryContext,
  RecoveryDecision,
  RecoveryHook,
} from './dag-options.js';

export {
  buildReportModel,
  type ExecutionBar,
  generateReport,
  type ReportModel,
  renderReport,
  type StepDetail,
} from '@stepwise/dashboard/report';
export {
  ApprovalsConfigSchema,
  CommandsConfigSchema,
  defineConfig,
  type McpPluginConfig,
  type McpServerConfig,
  ModelConfigSchema,
  type ModulePluginConfig,
  type PluginConfig,
  PluginConfigSchema,
  type StepwiseConfig,
  StepwiseConfigSchema,
} from './config-schema.js';
export {
  type AgenticLimits,
  createRunner,
  defaultDatabasePath,
  type EngineName,
  type ModelEndpoint,
  openSqliteStore,
  type Runner,
  type RunnerOptions,
} from './create-runner.js';
export { type ExitCode, ExitCodes, exitCodeForError, exitCodeForResult } from './exit-codes.js';
export {
  CONFIG_FILE_NAMES,
  type ConfigProblem,
  findConfigFile,
  formatConfigProblems,
  type LoadConfigOptions,
  type LoadedConfig,
  loadConfig,
  loadConfigFile,
  parseConfig,
} from './load-config.js';
export {
  describePluginSource,
  loadPluginModule,
  localPluginFiles,
  type PluginSource,
  type RegisterPluginsOptions,
  registerPlugins,
} from './load-plugins.js';
export { type GraphFormat, planToDot, planToGraph, planToMermaid } from './plan-graph.js';
export {
  approvalPolicyFromConfig,
  type ConfigOverrides,
  runnerOptionsFromConfig,
} from './runner-options-from-config.js';
export {
  type PlanTaskOptions,
  planTask,
  type ResumeSolveOptions,
  resumeSolve,
  type SolveAttempt,
  type SolveEvent,
  type SolveModel,
  type SolveOptions,
  type SolveResult,
  solve,
} from './solve.js';
export {
  checkTrust,
  recordTrust,
  TRUSTED_PATHS_VARIABLE,
  type TrustCandidate,
  type TrustOptions,
  type TrustRecord,
  trustStorePath,
  type UntrustedFile,
  UntrustedFileError,
} from './trust-store.js';
export { type UnifiedDiffOptions, unifiedDiff } from './unified-diff.js';

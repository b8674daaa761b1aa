export { BASE_ENVIRONMENT, type ChildEnvironmentOptions, childEnvironment } from './child-environment.js';
export type { CommandSandboxRecord } from './command-launch.js';
export {
  type CommandContext,
  type CommandPolicy,
  type CommandRefusal,
  checkCommand,
  executableName,
  looksLikePath,
  pathArguments,
} from './command-policy.js';
export { type CommitOptions, commitChanges, type FileChange } from './commit-changes.js';
export { type DirectoryEntry, type DirListOutput, dirListInput, dirListTool } from './dir-list-tool.js';
export { type FileCreateOutput, fileCreateInput, fileCreateTool } from './file-create-tool.js';
export { type FileDeleteOutput, fileDeleteInput, fileDeleteTool } from './file-delete-tool.js';
export { type FileEditOutput, fileEditInput, fileEditTool } from './file-edit-tool.js';
export { type FileGlobOutput, fileGlobInput, fileGlobTool } from './file-glob-tool.js';
export { type FilePatchOutput, filePatchInput, filePatchTool } from './file-patch-tool.js';
export { type FileReadOutput, fileReadInput, fileReadTool } from './file-read-tool.js';
export { type FileSearchOutput, fileSearchInput, fileSearchTool, type SearchMatch } from './file-search-tool.js';
export { type FileSystem, nodeFileSystem } from './file-system.js';
export { type FileWriteOutput, fileWriteInput, fileWriteTool } from './file-write-tool.js';
export { nodePreconditions, PROJECT_MARKERS } from './node-preconditions.js';
export { createNodeTools, NODE_TOOL_ALIASES, type NodeToolsOptions, nodeTools } from './node-tools.js';
export {
  type BubblewrapFeatures,
  bubblewrapArguments,
  type OsSandboxOptions,
  type OsSandboxStatus,
  osSandboxStatus,
  SANDBOX_HOME,
  type SandboxedCommand,
  type SandboxMode,
} from './os-sandbox.js';
export type { ProtectedChanges, ProtectedPaths, ProtectedSnapshot } from './protected-paths.js';
export { type CommandOptions, type RunCommandOutput, runCommandInput, runCommandTool } from './run-command-tool.js';
export { type ProcessResult, type RunProcessOptions, runProcess } from './run-process.js';
export { applySearchReplace, type EditProblem, type SearchReplaceEdit } from './search-replace.js';
export {
  type ExtractFailingTestsOptions,
  extractFailingTests,
} from './test-output/extract-failing-tests.js';
export type { FailingTest, TestRunner } from './test-output/failing-test.js';
export { unifiedDiff } from './unified-diff.js';
export {
  CHECKPOINT_TOO_LARGE,
  createCheckpoint,
  openCheckpoint,
  type WorkspaceChanges,
  type WorkspaceCheckpoint,
  type WorkspaceCheckpointOptions,
} from './workspace-checkpoint.js';
export {
  isInside,
  type ResolvedPath,
  type ResolveOptions,
  type SandboxReason,
  WorkspaceSandbox,
  type WorkspaceSandboxOptions,
} from './workspace-sandbox.js';

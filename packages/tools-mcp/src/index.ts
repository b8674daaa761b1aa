export { childEnvironment, DEFAULT_ENV_ALLOWLIST } from './child-environment.js';
export type { ServerInfo } from './mcp-connection.js';
export {
  type McpCommonOptions,
  type McpHttpOptions,
  type McpStdioOptions,
  type McpToolDescriptor,
  type McpToolsOptions,
  validateMcpOptions,
} from './mcp-options.js';
export { effectOf, stepwiseToolName } from './mcp-tool.js';
export { type McpPlugin, mcpTools } from './mcp-tools.js';
export type { McpSandboxMode, McpSandboxOptions } from './sandbox-options.js';
export type { McpSandboxStatus } from './server-launch.js';
export type { McpContentSummary, McpToolOutput } from './tool-output.js';

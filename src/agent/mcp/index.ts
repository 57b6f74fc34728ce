export { McpHub, resultText, TOOL_SEPARATOR, type McpHubOptions, type ServerStatus, type ServerState } from "./hub.js";
export { loadMcpConfig, parseMcpConfig, McpConfigError, type McpConfig, type McpServerConfig } from "./config.js";

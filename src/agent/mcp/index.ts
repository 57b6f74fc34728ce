export { McpHub, resultText, type McpHubOptions } from "./hub.js";
export { McpToolSource } from "./source.js";
export { TOOL_SEPARATOR, type ServerStatus, type ServerState } from "../tool-source.js";
export { loadMcpConfig, parseMcpConfig, McpConfigError, type McpConfig, type McpServerConfig } from "./config.js";

export * from "./types.js";
export { echoAgent, latestUserText } from "./echo.js";
export { openAiAgent, settingsToRequest } from "./openai.js";
export { OPENAI_DEFAULTS, type OpenAiAgentOptions } from "./openai-client.js";
export { parseRetryAfter } from "./http.js";
export {
  approveAll,
  builtinTools,
  currentTimeTool,
  denyAll,
  DENIED,
  searchSessionsTool,
  toolRegistry,
  type ApprovalDecision,
  type ApprovalHandler,
  type ApprovalVerdict,
  runToolCallDetailed,
  type ToolOutcome,
  type Tool,
  type ToolContext,
  type ToolRegistry,
} from "./tools.js";
export { personas, DEFAULT_PERSONA_PROMPT, type Persona, type PersonaRegistry } from "./personas.js";
export { buildSystemPrompt, MEMORY_HEADING } from "./prompt.js";
export {
  createAgentFactory,
  settingsFromMetadata,
  parseModelName,
  parseThinkingLevel,
  parseTemperature,
  parseMaxOutputTokens,
  METADATA_KEYS,
  type AgentDefaults,
  type AgentFactory,
  type TurnOverrides,
  type Parsed,
} from "./factory.js";
export { resolvePolicy, chatPolicyKey, TOOL_POLICIES, type ToolPolicy, type PolicyRule, type PolicyChat } from "./tool-policy.js";

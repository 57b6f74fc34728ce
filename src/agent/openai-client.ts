/**
 * An OpenAI-compatible agent's options, their defaults and checks, and the Client every request of
 * one agent shares (openai.ts runs the turns, openai-stream.ts makes each call).
 */
import type { SpeakerNames } from "./content.js";
import { denyAll, type ApprovalHandler, type ToolRegistry } from "./tools.js";
import { AgentError, noopLog, type AgentLog, type ModelSettings } from "./types.js";

export interface OpenAiAgentOptions {
  /** e.g. https://api.openai.com/v1, http://localhost:11434/v1 (Ollama), http://localhost:8080/v1 (llama.cpp). */
  baseUrl: string;
  apiKey?: string;
  settings: ModelSettings;
  tools?: ToolRegistry;
  /** Defaults to denyAll: tools run only when something approves them. */
  approval?: ApprovalHandler;
  /** Rounds of tool calls per turn; when the model asks for more, the turn ends with a notice. */
  maxToolRounds?: number;
  /** Per tool call (TOOL_TIMEOUT); past it the model gets an error result. */
  toolTimeoutMs?: number;
  /** From sending the request until response headers arrive. Not retried: a hung server stays hung while the user waits. */
  connectTimeoutMs?: number;
  /** Longest silence between two reads of the streamed body. */
  idleTimeoutMs?: number;
  /** Retries after the first attempt, on 429, 5xx and refused/reset connections, before any text streamed. */
  maxRetries?: number;
  retryBaseMs?: number;
  maxRetryDelayMs?: number;
  /** The HTTP client; default modelFetch (transport.ts), a fetch-compatible POST over node:http. */
  fetch?: typeof fetch;
  /** Injected by tests to observe retry delays without waiting them out. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  log?: AgentLog;
  /** How a group speaker's name reaches the model (MODEL_SPEAKER_NAMES); default the `name` field. */
  speakerNames?: SpeakerNames;
  /** Counts each model call's tokens and checks the budgets before it (issue 29); none: nothing is counted. */
  meter?: import("./model-meter.js").ModelMeter;
}

export const OPENAI_DEFAULTS = {
  // Generous: local servers (Ollama, llama.cpp) load the model before sending headers.
  connectTimeoutMs: 60_000,
  // Reasoning models can think silently for a long time between chunks.
  idleTimeoutMs: 120_000,
  maxRetries: 3,
  retryBaseMs: 500,
  maxRetryDelayMs: 60_000,
  maxToolRounds: 8,
} as const;

function checkOptions(o: OpenAiAgentOptions): string {
  let url: URL;
  try {
    url = new URL(o.baseUrl);
  } catch {
    throw new AgentError("Config", "OPENAI_BASE_URL is not a valid URL; set it to the API root, e.g. https://api.openai.com/v1 or http://localhost:11434/v1.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new AgentError("Config", `OPENAI_BASE_URL must use http or https, not ${url.protocol}; e.g. http://localhost:11434/v1.`);
  }
  if (!o.settings.model.trim()) throw new AgentError("Config", "No model name is set; set OPENAI_MODEL or choose one with /model.");
  return `${o.baseUrl.replace(/\/+$/, "")}/chat/completions`;
}

/** What every request of one agent shares: its options, with defaults filled in, and what they resolve to. */
export interface Client {
  opts: OpenAiAgentOptions;
  o: ReturnType<typeof withDefaults>;
  /** The chat-completions URL. */
  url: string;
  headers: Record<string, string>;
  log: AgentLog;
  approval: ApprovalHandler;
  /** The tools offered to the model; undefined when there are none, or no tool rounds are allowed. */
  tools: ToolRegistry | undefined;
}

function withDefaults(opts: OpenAiAgentOptions) {
  return { ...OPENAI_DEFAULTS, ...definedOnly(opts) };
}

/** The Client of one agent; throws AgentError('Config') with the fix when the options cannot work. */
export function openAiClient(opts: OpenAiAgentOptions): Client {
  const url = checkOptions(opts);
  const o = withDefaults(opts);
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  return {
    opts,
    o,
    url,
    headers,
    log: opts.log ?? noopLog,
    approval: opts.approval ?? denyAll,
    tools: o.maxToolRounds > 0 && opts.tools && opts.tools.list().length > 0 ? opts.tools : undefined,
  };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

import { SwitchboardError } from "../errors.js";
/**
 * The agent layer's public types. The runtime drives an Agent one turn at a
 * time; everything provider-specific stays behind this interface.
 */

export const THINKING_LEVELS = ["off", "low", "medium", "high"] as const;
export type ThinkingLevel = (typeof THINKING_LEVELS)[number];

export interface ToolCall {
  id: string;
  name: string;
  /** The raw JSON text the model produced; it may be invalid, and tools must not trust it. */
  arguments: string;
}

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  /** On a `tool` message: the call it answers. */
  toolCallId?: string;
  /** On an `assistant` message: the tools it asked for. */
  toolCalls?: ToolCall[];
  /** On a `user` message in a group: who said it (see content.ts for how it reaches the model). */
  name?: string;
  /** On a `user` message: images for a vision model (MODEL_VISION), sent as image content parts. */
  images?: import("./content.js").ImageInput[];
}

export interface ModelSettings {
  model: string;
  thinkingLevel?: ThinkingLevel;
  /** 0..2 */
  temperature?: number;
  maxOutputTokens?: number;
}

export type NoticeSeverity = "info" | "warn" | "error";

export type AgentOutput =
  | { type: "text-delta"; text: string }
  | { type: "notice"; severity: NoticeSeverity; text: string }
  /** One tool call finished (run, denied or failed): the turn keeps it in the transcript. */
  | { type: "tool"; call: ToolCall; server?: string; decision: "approved" | "denied" | "error"; note?: string; result: string }
  /**
   * `text` is every text-delta of the turn concatenated, so a sink can replace the streamed draft with it.
   * `toolLimit`: the model still asked for tools after `toolRounds` rounds, the limit (the turn tells the user when no text came).
   * `settled`: the turn's model calls' usage settlements, still being written (metered.ts); whoever ends the turn waits
   * for it before the answer goes out, beside its own commit instead of before it. Never rejects.
   */
  | { type: "done"; text: string; toolRounds: number; toolLimit?: boolean; settled?: Promise<void> };

export interface TurnRequest {
  system: string;
  /** The bounded history window, with the new user message last. */
  messages: ChatMessage[];
  signal: AbortSignal;
}

export interface Agent {
  readonly name: string;
  /** Runs the whole turn, tool loop included. Failures are thrown as AgentError from the iterator. */
  run(req: TurnRequest): AsyncIterable<AgentOutput>;
}

/** pino-compatible: only the object-first call form is used. */
export interface AgentLog {
  debug(obj: Record<string, unknown>, msg?: string): void;
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
  error(obj: Record<string, unknown>, msg?: string): void;
}

export const AGENT_ERROR_CODES = ["Timeout", "RateLimited", "Upstream", "MalformedStream", "Aborted", "Config", "Budget"] as const;
export type AgentErrorCode = (typeof AGENT_ERROR_CODES)[number];

/**
 * A typed agent failure with a stable `code`. `message` says how to fix the
 * problem and never contains the API key (provider code redacts upstream text).
 */
export class AgentError extends SwitchboardError<AgentErrorCode> {
  override readonly name = "AgentError";
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(code: AgentErrorCode, message: string, options: { cause?: unknown; status?: number; retryAfterMs?: number } = {}) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

export function isAgentError(e: unknown, code?: AgentErrorCode): e is AgentError {
  return e instanceof AgentError && (code === undefined || e.code === code);
}

export const aborted = () => new AgentError("Aborted", "The turn was interrupted before the agent finished; send a new message to continue.");

export const noopLog: AgentLog = { debug() {}, info() {}, warn() {}, error() {} };

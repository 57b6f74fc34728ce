import { z } from "zod";
import { AgentError, type ToolCall } from "./types.js";
import type { ToolPolicy } from "./tool-policy.js";
import { approvalSpan } from "./gen-ai-trace.js";

export interface ToolContext {
  signal: AbortSignal;
}

export interface Tool {
  /** Letters, digits, `_` and `-`: what OpenAI-compatible servers accept as a function name. */
  name: string;
  description: string;
  /** JSON Schema of the arguments object, sent to the model as-is. */
  parameters: Record<string, unknown>;
  /** `args` is the parsed JSON the model sent: validate it. The returned text goes back to the model. */
  run(args: unknown, ctx: ToolContext): Promise<string>;
  /**
   * The tool's own default policy (auto, ask or deny), which the operator's
   * configuration may override (tool-policy.ts). Unset means `ask`: a tool
   * runs unasked only when someone decided it is harmless.
   */
  policy?: ToolPolicy;
  /** The MCP server it comes from; unset for a built-in tool. */
  server?: string;
  /** Its own per-call limit (an MCP server's `timeoutMs`); otherwise the caller's (TOOL_TIMEOUT). */
  timeoutMs?: number;
}

export interface ToolRegistry {
  get(name: string): Tool | undefined;
  list(): readonly Tool[];
  names(): string[];
}

export type ApprovalDecision = "approve" | "deny";
/** A decision with who or what made it ("approved by Alice", "auto by policy"), kept in the transcript. */
export interface ApprovalVerdict {
  decision: ApprovalDecision;
  /** e.g. "policy auto", "approved by Alice", "expired", "cancelled by /stop". */
  note?: string;
}
/** Decides whether one tool call may run. A denial is reported to the model as the tool's result. */
export type ApprovalHandler = (call: ToolCall, ctx: ToolContext & { tool?: Tool }) => Promise<ApprovalDecision | ApprovalVerdict>;

export const denyAll: ApprovalHandler = async () => "deny";
export const approveAll: ApprovalHandler = async () => "approve";

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function toolRegistry(tools: Iterable<Tool>): ToolRegistry {
  const byName = new Map<string, Tool>();
  for (const t of tools) {
    if (!TOOL_NAME.test(t.name)) {
      throw new AgentError("Config", `Tool name "${t.name}" is invalid: use 1-64 letters, digits, "_" or "-".`);
    }
    if (byName.has(t.name)) throw new AgentError("Config", `Tool "${t.name}" is registered twice; give each tool a unique name.`);
    byName.set(t.name, t);
  }
  const list = [...byName.values()];
  return { get: (n) => byName.get(n), list: () => list, names: () => [...byName.keys()] };
}

/** Explains a zod failure to the model in one line, so it can correct its call. */
export function badArgs(tool: string, err: z.ZodError): string {
  const issues = err.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ");
  return `error: invalid arguments for ${tool}: ${issues}`;
}

// Tools are built for every turn; their argument schemas are built once (a zod schema costs
// about as much to build as a turn's SQL).
const CurrentTimeArgs = z.object({ timezone: z.string().min(1).max(64).optional() });
const SearchSessionsArgs = z.object({ query: z.string().trim().min(1).max(500) });

export function currentTimeTool(now: () => Date = () => new Date()): Tool {
  return {
    name: "current_time",
    policy: "auto",
    description: "Returns the current date and time, in UTC and optionally in an IANA time zone such as Europe/Paris.",
    parameters: {
      type: "object",
      properties: { timezone: { type: "string", description: "IANA time zone name, e.g. America/New_York. Omit for UTC." } },
      additionalProperties: false,
    },
    async run(args) {
      const parsed = CurrentTimeArgs.safeParse(args ?? {});
      if (!parsed.success) return badArgs("current_time", parsed.error);
      const at = now();
      const tz = parsed.data.timezone;
      if (!tz) return `UTC: ${at.toISOString()}`;
      try {
        const local = new Intl.DateTimeFormat("en-US", { timeZone: tz, dateStyle: "full", timeStyle: "long" }).format(at);
        return `UTC: ${at.toISOString()}\n${tz}: ${local}`;
      } catch {
        return `error: unknown time zone "${tz}"; use an IANA name such as Europe/Paris, or omit it for UTC.`;
      }
    },
  };
}

/** `search` is injected so the agent layer never depends on storage. */
export function searchSessionsTool(search: (query: string) => Promise<string>): Tool {
  return {
    name: "search_sessions",
    // Reads only the asking conversation's own sessions (scoped where it is built).
    policy: "auto",
    description: "Searches this user's earlier and archived conversations for a text query and returns matching excerpts.",
    parameters: {
      type: "object",
      properties: { query: { type: "string", description: "Words to look for." } },
      required: ["query"],
      additionalProperties: false,
    },
    async run(args) {
      const parsed = SearchSessionsArgs.safeParse(args);
      if (!parsed.success) return badArgs("search_sessions", parsed.error);
      const found = await search(parsed.data.query);
      return found.trim() === "" ? "No matching conversations." : found;
    },
  };
}

/** The harmless built-ins. `search_sessions` is offered only when a search function is supplied. */
export function builtinTools(opts: { searchSessions?: (query: string) => Promise<string>; now?: () => Date } = {}): ToolRegistry {
  const tools = [currentTimeTool(opts.now)];
  if (opts.searchSessions) tools.push(searchSessionsTool(opts.searchSessions));
  return toolRegistry(tools);
}

/** The start of every denial result; the model (and tests) can rely on it. */
export const DENIED = "denied by approval policy";
/** Tool output beyond this is cut, so one chatty tool cannot crowd out the conversation. */
export const MAX_TOOL_RESULT_CHARS = 16_000;

/** What one tool call came to: the text the model gets back, and the decision behind it (for the transcript). */
export interface ToolOutcome {
  content: string;
  decision: "approved" | "denied" | "error";
  /** Who or what decided, or why it failed. */
  note?: string;
}

/** Per-call limit when the caller gives none. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

const cut = (out: string, max: number) => (out.length > max ? `${out.slice(0, max)}\n[truncated]` : out);

/**
 * Runs one call through approval and the tool, and always returns the text to
 * send back as the `tool` message: failures become results the model can read,
 * so a bad call never ends the turn. Only an interrupt escapes, as a throw.
 */
export async function runToolCall(call: ToolCall, tools: ToolRegistry | undefined, approval: ApprovalHandler, signal: AbortSignal): Promise<string> {
  return (await runToolCallDetailed(call, tools, approval, signal)).content;
}

export async function runToolCallDetailed(
  call: ToolCall,
  tools: ToolRegistry | undefined,
  approval: ApprovalHandler,
  signal: AbortSignal,
  opts: { timeoutMs?: number; maxResultChars?: number } = {},
): Promise<ToolOutcome> {
  const tool = tools?.get(call.name);
  if (!tool) {
    const names = tools?.names().join(", ") || "none";
    return { content: `error: there is no tool named "${call.name}". Available tools: ${names}.`, decision: "error", note: "no such tool" };
  }
  let args: unknown;
  try {
    args = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
  } catch {
    return {
      content: `error: the arguments for ${call.name} were not valid JSON; call it again with a JSON object.`,
      decision: "error",
      note: "invalid JSON arguments",
    };
  }
  let verdict: ApprovalVerdict;
  try {
    const r = await approvalSpan(
      call,
      () => approval(call, { signal, tool }),
      (d) => (typeof d === "string" ? d : d.decision),
    );
    verdict = typeof r === "string" ? { decision: r } : r;
  } catch {
    verdict = { decision: "deny", note: "the approval failed" }; // fail closed: an approval handler that breaks never lets a call through
  }
  if (signal.aborted) throw new AgentError("Aborted", "The turn was interrupted while a tool call waited for approval.");
  if (verdict.decision !== "approve") {
    const why = verdict.note ? ` (${verdict.note})` : "";
    return {
      content: `${DENIED}: ${call.name} was not run${why}. Continue without it, or tell the user what you would need.`,
      decision: "denied",
      ...(verdict.note && { note: verdict.note }),
    };
  }
  const timeoutMs = tool.timeoutMs ?? opts.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const both = AbortSignal.any([signal, timeout]);
  try {
    const out = await new Promise<string>((resolve, reject) => {
      // A tool that ignores its signal still cannot hold the turn past the limit.
      const onAbort = () => reject(both.reason);
      both.addEventListener("abort", onAbort, { once: true });
      tool
        .run(args, { signal: both })
        .then(resolve, reject)
        .finally(() => both.removeEventListener("abort", onAbort));
    });
    return { content: cut(out, opts.maxResultChars ?? MAX_TOOL_RESULT_CHARS), decision: "approved", ...(verdict.note && { note: verdict.note }) };
  } catch (e) {
    if (signal.aborted) throw new AgentError("Aborted", "The turn was interrupted while a tool was running.");
    if (timeout.aborted) {
      return { content: `error: ${call.name} did not finish within ${Math.round(timeoutMs / 1000)} s and was stopped.`, decision: "error", note: "timed out" };
    }
    const msg = e instanceof Error ? e.message : String(e);
    return { content: `error: ${call.name} failed: ${msg}`, decision: "error", note: cut(msg, 200) };
  }
}

import { z } from "zod";
import { type AgentOutput, AgentError, type ToolCall } from "./types.js";

/**
 * One streamed chat-completions chunk, validated loosely: servers differ in
 * which fields they send (ids, index, usage-only chunks with no choices), and
 * a field we do not use must never fail the stream.
 */
const ToolCallDelta = z.object({
  index: z.number().int().nonnegative().nullish(),
  id: z.string().nullish(),
  function: z
    .object({
      name: z.string().nullish(),
      // Some servers send arguments as an object rather than JSON text.
      arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
    })
    .nullish(),
});
const Delta = z.object({ content: z.string().nullish(), tool_calls: z.array(ToolCallDelta).nullish() });
const Chunk = z.object({
  choices: z
    .array(
      z.object({
        index: z.number().nullish(),
        delta: Delta.nullish(),
        // A server that ignored `stream: true` answers with one whole message.
        message: Delta.nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  /** The model that answered, and (with stream_options.include_usage, in the last chunk) the tokens used: for telemetry. */
  model: z.string().nullish(),
  usage: z
    .object({
      prompt_tokens: z.number().nullish(),
      completion_tokens: z.number().nullish(),
      prompt_tokens_details: z.object({ cached_tokens: z.number().nullish() }).passthrough().nullish(),
    })
    .passthrough()
    .nullish(),
  error: z.unknown().optional(),
});
type ToolCallDelta = z.infer<typeof ToolCallDelta>;

export interface CompletionResult {
  text: string;
  toolCalls: ToolCall[];
  finishReason: string | undefined;
  /** The model the server says answered, when it says. */
  model?: string;
  /** Tokens in and out (and of the prompt, those read from the provider's cache), when the server reported them. */
  usage?: { input?: number; output?: number; cached?: number };
}

interface Slot {
  index: number;
  id: string;
  name: string;
  arguments: string;
}

const snippet = (s: string) => (s.length > 120 ? `${s.slice(0, 120)}…` : s);
const malformed = (why: string) =>
  new AgentError(
    "MalformedStream",
    `The model server sent a malformed stream: ${why}. Check that OPENAI_BASE_URL points at an OpenAI-compatible API and that the server supports streaming.`,
  );

/** Folds the chunks of one completion into its text and tool calls. */
export class CompletionAccumulator {
  private text = "";
  private finishReason: string | undefined;
  private model: string | undefined;
  private usage: CompletionResult["usage"];
  private sawDone = false;
  private readonly slots = new Map<number, Slot>();
  private last: Slot | undefined;

  constructor(private readonly redact: (s: string) => string = (s) => s) {}

  /** Feeds one SSE data payload; returns the text it adds, if any. Returns null after `[DONE]`. */
  push(data: string): string | null {
    if (data.trim() === "[DONE]") {
      this.sawDone = true;
      return null;
    }
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      throw malformed(`an event is not JSON (${JSON.stringify(snippet(this.redact(data)))})`);
    }
    const parsed = Chunk.safeParse(json);
    if (!parsed.success) throw malformed(`an event has an unexpected shape (${JSON.stringify(snippet(this.redact(data)))})`);
    const chunk = parsed.data;
    if (chunk.error !== undefined && chunk.error !== null) {
      const msg = (chunk.error as { message?: unknown }).message;
      const said = this.redact(typeof msg === "string" ? msg : JSON.stringify(chunk.error));
      throw new AgentError("Upstream", `The model server reported an error mid-reply: ${snippet(said)}. Retry, or check the server's logs.`);
    }
    if (chunk.model) this.model = chunk.model;
    if (chunk.usage)
      this.usage = {
        input: chunk.usage.prompt_tokens ?? undefined,
        output: chunk.usage.completion_tokens ?? undefined,
        cached: chunk.usage.prompt_tokens_details?.cached_tokens ?? undefined,
      };
    let added = "";
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue; // we ask for one choice; ignore any others
      const delta = choice.delta ?? choice.message;
      if (delta?.content) added += delta.content;
      for (const tc of delta?.tool_calls ?? []) this.addToolDelta(tc);
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
    this.text += added;
    return added;
  }

  private addToolDelta(d: ToolCallDelta): void {
    let slot: Slot | undefined;
    if (d.index !== null && d.index !== undefined) slot = this.slots.get(d.index) ?? this.open(d.index);
    else if (d.id && [...this.slots.values()].some((s) => s.id === d.id)) slot = [...this.slots.values()].find((s) => s.id === d.id);
    // Without an index, a fragment that names a new function starts a new call; the rest continue the last one.
    else if (d.id || d.function?.name || !this.last) slot = this.open(this.slots.size === 0 ? 0 : Math.max(...this.slots.keys()) + 1);
    else slot = this.last;
    if (!slot) return;
    this.last = slot;
    if (d.id) slot.id = d.id;
    const name = d.function?.name;
    if (name && slot.name !== name) slot.name += name;
    const args = d.function?.arguments;
    if (typeof args === "string") slot.arguments += args;
    else if (args) slot.arguments += JSON.stringify(args);
  }

  private open(index: number): Slot {
    const slot: Slot = { index, id: "", name: "", arguments: "" };
    this.slots.set(index, slot);
    return slot;
  }

  /** Ends the completion. `idPrefix` names calls whose server sent no id. */
  finish(idPrefix: string): CompletionResult {
    if (!this.sawDone && this.finishReason === undefined) throw malformed("it ended before the model finished (no finish_reason and no [DONE])");
    const toolCalls = [...this.slots.values()]
      .sort((a, b) => a.index - b.index)
      .map((s) => {
        if (!s.name) throw malformed("a tool call has no function name");
        return { id: s.id || `${idPrefix}_${s.index}`, name: s.name, arguments: s.arguments || "{}" };
      });
    return { text: this.text, toolCalls, finishReason: this.finishReason, ...(this.model && { model: this.model }), ...(this.usage && { usage: this.usage }) };
  }
}

/** What the user is told when the server stopped the reply short of its end. */
export function finishNotice(result: CompletionResult): AgentOutput | undefined {
  if (result.finishReason === "length") {
    return {
      type: "notice",
      severity: "warn",
      text: "The reply was cut off at the output token limit. Raise the max output tokens setting, or ask the model to continue.",
    };
  }
  if (result.finishReason === "content_filter") return { type: "notice", severity: "warn", text: "The model server's content filter stopped the reply." };
  return undefined;
}

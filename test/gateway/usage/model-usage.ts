/** Fake model replies that report the usage a test chooses (streamed in the last chunk, or in a whole JSON answer). */
import { type Reply, rawReply, sse } from "../../fakes/openai.js";

export interface Tokens {
  prompt: number;
  completion: number;
  cached?: number;
}

const usageOf = (t: Tokens) => ({
  prompt_tokens: t.prompt,
  completion_tokens: t.completion,
  total_tokens: t.prompt + t.completion,
  prompt_tokens_details: { cached_tokens: t.cached ?? 0 },
});

/** A streamed answer; with `tokens`, the usage-only chunk `stream_options.include_usage` asks for comes last. */
export function streamed(text: string, tokens?: Tokens): Reply {
  return rawReply([
    sse.chunk({ role: "assistant", content: "" }),
    sse.chunk({ content: text }),
    sse.chunk({}, "stop"),
    ...(tokens ? [sse.event({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "fake", choices: [], usage: usageOf(tokens) })] : []),
    sse.done,
  ]);
}

/** A whole (non-streamed) chat.completion, as a server that ignores `stream: true` answers. */
export function whole(text: string, tokens: Tokens): Reply {
  const body = {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "fake",
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
    usage: usageOf(tokens),
  };
  return { headers: { "content-type": "application/json" }, body: [JSON.stringify(body)] };
}

import { aborted, type Agent, type AgentOutput, type ChatMessage, type TurnRequest } from "./types.js";

/** Deltas are cut at this many characters so long echoes still stream, deterministically. */
const CHUNK = 64;

export function latestUserText(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === "user") return m.content;
  }
  return "";
}

/**
 * The provider used when no model is configured. It answers exactly
 * `echo: <latest user text>`; scripts and tests depend on that format.
 */
export function echoAgent(): Agent {
  return {
    name: "echo",
    async *run(req: TurnRequest): AsyncGenerator<AgentOutput> {
      const text = `echo: ${latestUserText(req.messages)}`;
      for (let i = 0; i < text.length; i += CHUNK) {
        if (req.signal.aborted) throw aborted();
        // Yield to the event loop so an interrupt issued between chunks is seen before the next one.
        await Promise.resolve();
        if (req.signal.aborted) throw aborted();
        yield { type: "text-delta", text: text.slice(i, i + CHUNK) };
      }
      if (req.signal.aborted) throw aborted();
      yield { type: "done", text, toolRounds: 0 };
    },
  };
}

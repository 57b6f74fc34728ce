import { speakerPrefix, userContent, wireName, type ContentPart, type SpeakerNames } from "./content.js";
import { AgentError, type ChatMessage, type ModelSettings, type TurnRequest } from "./types.js";

/**
 * The chat-completions wire format: a turn's messages as an OpenAI-compatible
 * server takes them, its settings as request fields, and the servers that
 * refuse a message's `name` (their group speakers go as a text prefix).
 */

export type WireMessage =
  | { role: "system"; content: string; name?: string }
  | { role: "user"; content: string | ContentPart[]; name?: string }
  | { role: "assistant"; content: string | null; name?: string; tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[] }
  | { role: "tool"; content: string; tool_call_id: string };

/** One message as the server takes it; a group speaker is `name`, or a text prefix for a server that refuses it. */
export function toWire(m: ChatMessage, speakers: SpeakerNames = "name"): WireMessage {
  const name = wireName(m.name);
  switch (m.role) {
    case "tool":
      return { role: "tool", content: m.content, tool_call_id: m.toolCallId ?? "" };
    case "assistant":
      if (!m.toolCalls?.length) return { role: "assistant", content: m.content, ...name };
      return {
        role: "assistant",
        content: m.content === "" ? null : m.content,
        ...name,
        tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: c.arguments } })),
      };
    case "user":
      if (speakers === "prefix" && m.name) return { role: "user", content: userContent(speakerPrefix(m.name) + m.content, m.images) };
      return { role: "user", content: userContent(m.content, m.images), ...name };
    default:
      return { role: m.role, content: m.content, ...name };
  }
}

/** The request fields a turn's settings map to; unset settings are left to the server's defaults. */
export function settingsToRequest(s: ModelSettings): Record<string, unknown> {
  const out: Record<string, unknown> = { model: s.model };
  if (s.temperature !== undefined) out.temperature = s.temperature;
  if (s.maxOutputTokens !== undefined) out.max_tokens = s.maxOutputTokens;
  if (s.thinkingLevel !== undefined && s.thinkingLevel !== "off") out.reasoning_effort = s.thinkingLevel;
  return out;
}

/** Servers (chat-completions URLs) seen refusing the `name` field: group speakers go to them as a prefix. */
export const REJECTS_NAME = new Set<string>();

/** A 400/422 whose text blames the `name` field, as servers that do not take it answer. */
export function rejectsName(err: unknown): boolean {
  return (
    err instanceof AgentError && (err.status === 400 || err.status === 422) && /['"`]?\bname\b['"`]?/i.test(err.message.split("The server said:")[1] ?? "")
  );
}

/** A turn's system prompt and messages, as the request's `messages`. */
export function wireMessages(req: TurnRequest, speakers: SpeakerNames): WireMessage[] {
  return [...(req.system ? [{ role: "system" as const, content: req.system }] : []), ...req.messages.map((m) => toWire(m, speakers))];
}

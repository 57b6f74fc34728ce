/**
 * Tool rounds in the transcript. Each call the agent made is kept as one
 * `tool` entry: a readable line for people (console, `sessions show`) and, in
 * `meta`, the call, its decision and its result (truncated) for the model.
 * Each entry turns back into its own assistant tool-call + tool-result pair,
 * so a history window cut anywhere still sends the model valid pairs.
 */
import type { AgentOutput, ChatMessage } from "../agent/types.js";
import type { WindowMessage } from "./live-session.js";

export type ToolRound = Extract<AgentOutput, { type: "tool" }>;

/** A stored result beyond this is cut: later turns need the gist, not the whole output. */
export const TRANSCRIPT_RESULT_CHARS = 2_000;
const ARGS_CHARS = 500;

const cut = (s: string, max: number) => (s.length > max ? `${s.slice(0, max)}…[truncated]` : s);

export interface ToolEntryMeta {
  type: "tool";
  call: { id: string; name: string; arguments: string };
  server?: string;
  decision: ToolRound["decision"];
  note?: string;
  result: string;
}

export function toolEntry(r: ToolRound): WindowMessage {
  const meta: ToolEntryMeta = {
    type: "tool",
    call: { id: r.call.id, name: r.call.name, arguments: cut(r.call.arguments, ARGS_CHARS) },
    decision: r.decision,
    result: cut(r.result, TRANSCRIPT_RESULT_CHARS),
    ...(r.server && { server: r.server }),
    ...(r.note && { note: r.note }),
  };
  const how = r.note ? `${r.decision}: ${r.note}` : r.decision;
  const content = `[tool ${r.call.name}(${cut(r.call.arguments, 200)}) ${how}]\n${cut(r.result, 300)}`;
  return { role: "tool", content, meta: JSON.stringify(meta) };
}

export function parseToolMeta(meta: string | null | undefined): ToolEntryMeta | undefined {
  if (!meta) return undefined;
  try {
    const m = JSON.parse(meta) as Partial<ToolEntryMeta>;
    if (m.type !== "tool" || !m.call || typeof m.call.id !== "string" || typeof m.call.name !== "string") return undefined;
    return m as ToolEntryMeta;
  } catch {
    return undefined;
  }
}

/** A window entry as the model sees it. */
export function windowToChat(m: WindowMessage): ChatMessage[] {
  if (m.role !== "tool") return [{ role: m.role, content: m.content }];
  const t = parseToolMeta(m.meta);
  // Without its call (written by something else), the model still reads what happened, as a note.
  if (!t) return [{ role: "assistant", content: m.content }];
  return [
    { role: "assistant", content: "", toolCalls: [{ id: t.call.id, name: t.call.name, arguments: t.call.arguments }] },
    { role: "tool", toolCallId: t.call.id, content: t.result },
  ];
}

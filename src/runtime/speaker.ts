import type { MessageEvent } from "./events.js";

/**
 * Who said a user message, as the transcript keeps it (`Message.meta`, JSON:
 * `{"speaker":{"id","name"}}`), so later turns, the console and the CLI can
 * tell Alice from Bob in a group.
 */
export interface Speaker {
  /** The platform sender id (platform:senderId). */
  id: string;
  name?: string;
}

/** The speaker of an event. */
export function speakerOf(ev: Pick<MessageEvent, "origin">): Speaker {
  const o = ev.origin;
  return { id: `${o.platform}:${o.senderId}`, ...(o.senderName ? { name: o.senderName } : {}) };
}

/** The `meta` JSON a user entry is stored with. */
export function speakerMeta(ev: Pick<MessageEvent, "origin">): string {
  return JSON.stringify({ speaker: speakerOf(ev) });
}

/** The speaker recorded in an entry's `meta`, if any (other keys and unreadable JSON are ignored). */
export function speakerFromMeta(meta: string | null | undefined): Speaker | undefined {
  if (!meta) return undefined;
  try {
    const s = (JSON.parse(meta) as { speaker?: unknown }).speaker as Partial<Speaker> | undefined;
    if (!s || typeof s !== "object" || typeof s.id !== "string") return undefined;
    return { id: s.id, ...(typeof s.name === "string" && s.name ? { name: s.name } : {}) };
  } catch {
    return undefined;
  }
}

/** The name the model sees for a speaker: the display name, else the sender id. */
export const speakerName = (s: Speaker | undefined): string | undefined => s?.name ?? s?.id.slice(s.id.indexOf(":") + 1);

/** The transcript entry of a user message: its text, the platform message it came from, and who said it. */
export function userEntry(
  ev: MessageEvent,
  content: string,
  sourceId: string | undefined,
): { role: "user"; content: string; sourceId?: string; meta: string; name?: string } {
  return { role: "user", content, ...(sourceId !== undefined && { sourceId }), meta: speakerMeta(ev), name: speakerName(speakerOf(ev)) };
}

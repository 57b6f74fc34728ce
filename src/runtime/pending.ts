import type { MessageEvent } from "./events.js";
import type { Pending, TurnOutcome } from "./turn.js";

/** A message waiting for its turn, with the promise its caller awaits. */
export function newPending(ev: MessageEvent): Pending {
  let resolve!: (o: TurnOutcome) => void;
  const done = new Promise<TurnOutcome>((r) => (resolve = r));
  return { event: ev, inboundIds: ev.inboundId ? [ev.inboundId] : [], sourceId: sourceIdOf(ev), done, resolve };
}

/**
 * The platform message an event came from, as its transcript entry records
 * it (platform:bot:chat:message), so a later edit or delete of that message
 * finds the entry. Undefined when the platform gave no message id.
 */
export function sourceIdOf(ev: MessageEvent): string | undefined {
  const o = ev.origin;
  return o.messageId ? `${o.platform}:${ev.replyTo.botId}:${o.chatId}:${o.messageId}` : undefined;
}

/** Busy policy `collect`: a message that arrives during a turn joins the one follow-up turn. */
export function mergeInto(p: Pending, ev: MessageEvent): void {
  p.event = { ...ev, text: `${p.event.text}\n\n${ev.text}`, attachments: [...(p.event.attachments ?? []), ...(ev.attachments ?? [])] };
  if (ev.inboundId) p.inboundIds.push(ev.inboundId);
  // One entry now holds several messages: an edit of one of them cannot be applied to it.
  p.sourceId = undefined;
}

/** The user's text as the agent and the transcript see it, attachments described. */
export function renderUserText(ev: MessageEvent): string {
  const parts = [ev.text, ...(ev.attachments ?? []).map(describeAttachment)];
  return parts.filter((p) => p.length > 0).join("\n");
}

/** One attachment as the agent reads it when it gets no file: `[photo attached: cat.jpg, image/jpeg, 1234 bytes]`. */
export function describeAttachment(a: { kind: string; name?: string; mimeType?: string; size?: number }): string {
  const bits = [a.name, a.mimeType, a.size !== undefined ? `${a.size} bytes` : undefined].filter(Boolean).join(", ");
  return `[${a.kind} attached${bits ? `: ${bits}` : ""}]`;
}

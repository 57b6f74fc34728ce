import type { InEvent, Severity } from "./events.js";
import type { Ledger, Reply } from "./ledger.js";
import type { LiveSession } from "./live-session.js";

export type Notice = { severity: Severity; text: string };

/** What an event handled without a turn commits: a command's notices, an unaddressed message kept as context. */
export interface NoticeCommit {
  messages: Array<{ role: "user" | "assistant"; content: string; sourceId?: string; meta?: string; name?: string }>;
  turnIncrement: number;
  notices: Notice[];
  /** The event is handled with this commit: its inbound record is marked so. */
  final: boolean;
}

/** Commits the notices as replies to `event` (and its messages), then emits them, each with the delivery recorded for it. */
export async function commitNotices(ledger: Ledger, session: LiveSession, event: InEvent, c: NoticeCommit): Promise<void> {
  const replies: Reply[] = c.notices.map((n) => ({ replyTo: event.replyTo, text: n.text, kind: "notice", severity: n.severity }));
  const { deliveries } = await ledger.commit({
    sessionId: session.id,
    inboundIds: c.final && event.inboundId ? [event.inboundId] : [],
    messages: c.messages,
    turnIncrement: c.turnIncrement,
    replies,
  });
  if (c.messages.length) session.remember(c.messages);
  c.notices.forEach((n, i) => {
    session.emit({
      kind: "notice",
      sessionId: session.id,
      severity: n.severity,
      text: n.text,
      replyTo: event.replyTo,
      inboundId: event.inboundId,
      deliveryId: deliveries[i]?.id,
    });
  });
}

/**
 * An approval's row as the service writes it, and the card drawn from it:
 * the whole arguments go on the row (what the approved call runs with) and
 * the card shows them (src/runtime/approvals/arguments.ts).
 */
import { randomInt } from "node:crypto";
import type { ToolCall } from "../../agent/types.js";
import type { ApprovalRecord } from "../../store/approvals.js";
import type { MessageEvent } from "../events.js";
import type { ApprovalCard } from "./card.js";

const ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789";
const newId = () => Array.from({ length: 6 }, () => ID_ALPHABET[randomInt(ID_ALPHABET.length)]).join("");

/** A pending approval of `call` (its arguments already pretty-printed) for the turn answering `event`. */
export function pendingRecord(
  call: Pick<ToolCall, "name">,
  args: string,
  server: string | undefined,
  ctx: { sessionId: string; event: MessageEvent },
  o: { owner: string; timeoutMs: number },
): ApprovalRecord {
  const to = ctx.event.replyTo;
  return {
    id: newId(),
    sessionId: ctx.sessionId,
    platform: to.platform,
    botId: to.botId,
    chatId: to.chatId,
    replyTo: JSON.stringify(to),
    requesterId: ctx.event.origin.senderId,
    requesterName: ctx.event.origin.senderName ?? null,
    privateChat: to.kind === "private",
    tool: call.name,
    server: server ?? null,
    arguments: args,
    status: "pending",
    always: false,
    decidedById: null,
    decidedByName: null,
    cardMessageId: null,
    owner: o.owner,
    createdAt: new Date(),
    expiresAt: new Date(Date.now() + o.timeoutMs),
    decidedAt: null,
  };
}

/** The card of an approval as it stands; `reason` says why it ended (expired, cancelled). */
export function cardOf(r: ApprovalRecord, reason?: string): ApprovalCard {
  return {
    id: r.id,
    tool: r.tool,
    arguments: r.arguments,
    state: r.status,
    ...(r.server && { server: r.server }),
    ...(r.requesterName && { requesterName: r.requesterName }),
    ...(r.decidedByName && { decidedBy: r.decidedByName }),
    ...(r.always && { always: true }),
    ...(reason && { reason }),
  };
}

/**
 * Approval cards in the web console: a bot message that carries the card
 * (`card` on the history entry and the SSE event), drawn by the page with
 * Approve / Deny / Always buttons. A press POSTs /api/console/approvals as
 * the page's current speaker; the answer is shown to that page only.
 */
import { z } from "zod";
import { BUTTONS, cardText, type ApprovalAction } from "../types.js";
import type { ApprovalCard, AdapterContext, HttpRequest, HttpResponse } from "../types.js";
import * as ids from "./ids.js";

export interface ConsoleCard {
  id: string;
  state: ApprovalCard["state"];
  /** The buttons still offered: none once decided. */
  actions: Array<{ action: ApprovalAction; label: string }>;
}

export const consoleCard = (card: ApprovalCard): { text: string; card: ConsoleCard } => ({
  text: cardText(card, { fallback: true }),
  card: { id: card.id, state: card.state, actions: card.state === "pending" ? BUTTONS.map((b) => ({ ...b })) : [] },
});

const consoleId = z.string().regex(ids.ID_PATTERN, `must be ${ids.ID_RULE}`);
const ClickBody = z.object({
  approvalId: z.string().regex(/^[a-z0-9]{4,16}$/),
  action: z.enum(["approve", "deny", "always"]),
  chatId: z.string().min(1).max(200),
  sender: z.object({ id: consoleId, name: z.string().trim().min(1).max(100) }),
});

const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  body: JSON.stringify(body),
});

/** POST /api/console/approvals: { approvalId, action, chatId, sender } → { ok, text } for the presser only. */
export async function consoleClick(req: HttpRequest, ctx: AdapterContext | undefined): Promise<HttpResponse> {
  if (!ctx?.approvalClick) return json(503, { error: "the console adapter is not running; start the gateway" });
  let raw: unknown;
  try {
    raw = JSON.parse(req.rawBody.toString("utf8"));
  } catch {
    return json(400, {
      error: 'the body is not valid JSON; send {"approvalId":"abc234","action":"approve","chatId":"dm:alice","sender":{"id":"alice","name":"Alice"}}',
    });
  }
  const p = ClickBody.safeParse(raw);
  if (!p.success) return json(400, { error: `invalid approval click: ${p.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ")}` });
  const b = p.data;
  const r = await ctx.approvalClick({ id: b.approvalId, action: b.action, chatId: b.chatId, senderId: b.sender.id, senderName: b.sender.name });
  return json(200, r);
}

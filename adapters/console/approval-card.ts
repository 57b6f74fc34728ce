/**
 * Approval cards in the web console: a bot message that carries the card
 * (`card` on the history entry and the SSE event), drawn by the page with
 * Approve / Deny / Always buttons. A press POSTs /api/console/approvals as
 * the page's current speaker; the answer is shown to that page only.
 *
 * The page renders a bot message's text as Markdown, so the card writes its
 * arguments, whole, in a code fence longer than any run of backticks in them
 * (nothing in them can end it, and indentation stays), and escapes every
 * name in it (the tool, its server, who asked, who decided, why it ended) so
 * none can format the card: each shows as the text it is, a line break or
 * another control or invisible character as its escape (`\n`, `\u202e`).
 */
import { z } from "zod";
import { argumentsLine, BUTTONS, cardTitle, statusLine, type ApprovalAction } from "../types.js";
import type { ApprovalCard, AdapterContext, HttpRequest, HttpResponse } from "../types.js";
import * as ids from "./ids.js";

export interface ConsoleCard {
  id: string;
  state: ApprovalCard["state"];
  /** The buttons still offered: none once decided. */
  actions: Array<{ action: ApprovalAction; label: string }>;
}

/** Characters a name would draw as a line break, as nothing, or as text reordered: shown as their escapes instead. */
const UNSEEN = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };
const escapeOf = (c: string) => NAMED[c] ?? [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`).join("");

/**
 * A name as the card's Markdown shows it, literally: unseen characters as their escapes (first, so their
 * backslashes are escaped with the rest), then Markdown's punctuation backslash-escaped (CommonMark lets any
 * of it be), `:` and `@` too, so no name becomes an autolink.
 */
const plain = (s: string) => s.replace(UNSEEN, escapeOf).replace(/[\\`*_{}[\]()#+\-.!<>|~&:@]/g, "\\$&");

/** The card's names, each `plain`; the arguments stay as they are (they go in the code fence). */
const named = (card: ApprovalCard): ApprovalCard => ({
  ...card,
  tool: plain(card.tool),
  ...(card.server !== undefined && { server: plain(card.server) }),
  ...(card.requesterName && { requesterName: plain(card.requesterName) }),
  ...(card.decidedBy && { decidedBy: plain(card.decidedBy) }),
  ...(card.reason && { reason: plain(card.reason) }),
});

function text(card: ApprovalCard): string {
  const c = named(card);
  const fence = "`".repeat(Math.max(3, ...[...card.arguments.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  const lines = [cardTitle(c), argumentsLine(card), `${fence}\n${card.arguments}\n${fence}`, statusLine(c)];
  if (card.state === "pending") lines.push(`Reply /approve ${card.id} or /deny ${card.id}.`);
  return lines.join("\n");
}

export const consoleCard = (card: ApprovalCard): { text: string; card: ConsoleCard } => ({
  text: text(card),
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

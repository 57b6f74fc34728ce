/**
 * An approval card: what a chat shows for a tool call that waits for a
 * person. The core describes it; each adapter draws it with its platform's
 * own buttons (adapters/<platform>/approval-card.ts), and every platform gets
 * the same text fallback (`/approve <id>`, `/deny <id>`).
 */
import { argumentsLine, HEADING_ROOM, layoutArguments, partHeading, STATUS_ROOM } from "./arguments.js";

export type CardState = "pending" | "approved" | "denied" | "expired" | "cancelled";
export type ApprovalAction = "approve" | "deny" | "always";

export interface ApprovalCard {
  id: string;
  tool: string;
  server?: string;
  /** Pretty-printed and whole: what the approved call runs with (prettyArguments). */
  arguments: string;
  /**
   * Set by the drawing when the arguments did not fit the card: they were
   * posted in this many messages just before it (src/runtime/approvals/arguments.ts).
   */
  argumentsAbove?: number;
  requesterName?: string;
  state: CardState;
  /** Who decided, or why it ended (expired, "the gateway restarted", "/stop"). */
  decidedBy?: string;
  always?: boolean;
  reason?: string;
}

/** The button payload every adapter carries: `approval:<action>:<id>` (short: Telegram allows 64 bytes). */
export const encodeAction = (action: ApprovalAction, id: string) => `approval:${action}:${id}`;

export function decodeAction(data: string): { action: ApprovalAction; id: string } | undefined {
  const m = /^approval:(approve|deny|always):([a-z0-9]{4,16})$/.exec(data);
  return m ? { action: m[1] as ApprovalAction, id: m[2]! } : undefined;
}

export const BUTTONS: ReadonlyArray<{ action: ApprovalAction; label: string }> = [
  { action: "approve", label: "Approve" },
  { action: "deny", label: "Deny" },
  { action: "always", label: "Always in this chat" },
];

/**
 * The model's arguments as an approver reads them: JSON indented by two
 * spaces when they parse, else exactly as sent. Never cut: a person approves
 * every character the call runs with.
 */
export function prettyArguments(raw: string): string {
  let shown: string;
  try {
    shown = JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    shown = raw; // shown as sent: the tool gets an error result for it anyway
  }
  return visible(shown);
}

/**
 * Characters a card would draw as nothing, or as text reordered or on a new line (format characters such as
 * U+202E RIGHT-TO-LEFT OVERRIDE and zero-width ones, and U+2028/2029), written as their JSON escapes: an
 * approver must see what runs, not what the model wants shown. In JSON they occur only inside strings, where
 * the escape means the same character, so the arguments shown still parse to the same value.
 */
const INVISIBLE = /[\p{Cf}\u2028\u2029]/gu;
function visible(text: string): string {
  // Each UTF-16 unit escaped: an astral one (U+E0001 LANGUAGE TAG) is written as its JSON surrogate pair.
  return text.replace(INVISIBLE, (c) => [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`).join(""));
}

export function toolLabel(c: Pick<ApprovalCard, "tool" | "server">): string {
  return c.server ? `${c.tool} (server ${c.server})` : c.tool;
}

/** The card's status line: "Approved by Alice", "Expired", ... */
export function statusLine(c: ApprovalCard): string {
  const by = shortName(c.decidedBy ?? "someone");
  switch (c.state) {
    case "pending":
      return `Waiting for approval (id ${c.id}).`;
    case "approved":
      return `Approved by ${by}${c.always ? " (always in this chat)" : ""}.`;
    case "denied":
      return `Denied by ${by}.`;
    case "expired":
      return `Expired${c.reason ? `: ${c.reason}` : ""}.`;
    case "cancelled":
      return `Cancelled${c.reason ? `: ${c.reason}` : ""}.`;
  }
}

/** A display name as a card shows it: bounded, so a decided card still fits where the pending one did (STATUS_ROOM). */
const shortName = (name: string) => (name.length > 100 ? `${name.slice(0, 100)}…` : name);

export function cardTitle(c: ApprovalCard): string {
  return `The agent wants to use the tool ${toolLabel(c)}${c.requesterName ? ` for ${shortName(c.requesterName)}` : ""}.`;
}

/**
 * Plain text for a card: the title, the arguments (or where they are, with
 * `argumentsAbove`) and the status; with `fallback`, how to answer by text.
 */
export function cardText(c: ApprovalCard, opts: { fallback?: boolean } = {}): string {
  const lines = [cardTitle(c), argumentsLine(c), ...(c.argumentsAbove ? [] : [c.arguments]), statusLine(c)];
  if (c.state === "pending" && opts.fallback) lines.push(`Reply /approve ${c.id} or /deny ${c.id}.`);
  return lines.join("\n");
}

/**
 * A card as plain-text messages for a platform whose messages hold `limit`
 * characters: the argument parts to post first (none when the card holds
 * them), and the card to post after them.
 */
export function plainCard(c: ApprovalCard, limit: number): { parts: string[]; card: ApprovalCard } {
  const fixed = cardText({ ...c, arguments: "", argumentsAbove: 1 }).length + STATUS_ROOM;
  const parts = layoutArguments(c.arguments, { card: limit - fixed, part: limit - HEADING_ROOM });
  return {
    parts: parts.map((p, i) => `${partHeading(c, i, parts)}\n${p.text}`),
    card: parts.length ? { ...c, argumentsAbove: parts.length } : c,
  };
}

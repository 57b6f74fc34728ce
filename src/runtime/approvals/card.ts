/**
 * An approval card: what a chat shows for a tool call that waits for a
 * person. The core describes it; each adapter draws it with its platform's
 * own buttons (adapters/<platform>/approval-card.ts), and every platform gets
 * the same text fallback (`/approve <id>`, `/deny <id>`).
 */
export type CardState = "pending" | "approved" | "denied" | "expired" | "cancelled";
export type ApprovalAction = "approve" | "deny" | "always";

export interface ApprovalCard {
  id: string;
  tool: string;
  server?: string;
  /** Pretty-printed and truncated. */
  arguments: string;
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

const ARGS_MAX = 600;

/** The model's arguments as a card shows them: indented JSON when they parse, cut to a readable size. */
export function prettyArguments(raw: string): string {
  let text = raw;
  try {
    text = JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    // shown as sent: the tool gets an error result for it anyway
  }
  return text.length > ARGS_MAX ? `${text.slice(0, ARGS_MAX)}…` : text;
}

export function toolLabel(c: Pick<ApprovalCard, "tool" | "server">): string {
  return c.server ? `${c.tool} (server ${c.server})` : c.tool;
}

/** The card's status line: "Approved by Alice", "Expired", ... */
export function statusLine(c: ApprovalCard): string {
  switch (c.state) {
    case "pending":
      return `Waiting for approval (id ${c.id}).`;
    case "approved":
      return `Approved by ${c.decidedBy ?? "someone"}${c.always ? " (always in this chat)" : ""}.`;
    case "denied":
      return `Denied by ${c.decidedBy ?? "someone"}.`;
    case "expired":
      return `Expired${c.reason ? `: ${c.reason}` : ""}.`;
    case "cancelled":
      return `Cancelled${c.reason ? `: ${c.reason}` : ""}.`;
  }
}

export function cardTitle(c: ApprovalCard): string {
  return `The agent wants to use the tool ${toolLabel(c)}${c.requesterName ? ` for ${c.requesterName}` : ""}.`;
}

/** Plain text for a card: the title, the arguments and the status; with `fallback`, how to answer by text. */
export function cardText(c: ApprovalCard, opts: { fallback?: boolean } = {}): string {
  const lines = [cardTitle(c), "Arguments:", c.arguments, statusLine(c)];
  if (c.state === "pending" && opts.fallback) lines.push(`Reply /approve ${c.id} or /deny ${c.id}.`);
  return lines.join("\n");
}

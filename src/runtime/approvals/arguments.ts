/**
 * A tool call's arguments as an approver reads them: whole, never cut, since
 * the approved call runs with every character. A card holds them when they
 * fit the platform's message; otherwise they are posted in numbered parts
 * just before the card, each within the limit, and the card (the only
 * message with the buttons) comes after the last part and points up to them.
 * Every platform draws with these functions (adapters/<platform>/approval-card.ts),
 * so a card shown and the same card edited once decided lay out alike.
 */
import type { ApprovalCard } from "./card.js";

/**
 * Past this the call is not offered for approval but denied: split across
 * messages it would flood the chat (ten Discord messages), and a person
 * cannot be expected to read it all before pressing Approve.
 */
export const ARGS_APPROVABLE_MAX = 16_000;

/**
 * Room kept on a card for its status line, which grows once decided
 * ("Approved by <name> (always in this chat).", an expiry's reason) and for
 * the text fallback's `/approve` line: a card that fits when shown still fits
 * when edited, so an edit never has to move the arguments.
 */
export const STATUS_ROOM = 300;

/** Room for a part's heading (`partHeading`), whatever the id and tool. */
export const HEADING_ROOM = 200;

export interface ArgumentsPart {
  text: string;
  /** This part goes on with the previous part's last line (cut mid-line); otherwise it starts a new line. */
  continuesLine: boolean;
}

/** How many characters a piece of text takes on a platform, counted one character at a time (escaping can make one several). */
export type Weight = (ch: string) => number;

/** UTF-16 units, as the platforms count message length. */
export const unitWeight: Weight = (ch) => ch.length;

export function weigh(text: string, weight: Weight = unitWeight): number {
  let n = 0;
  for (const ch of text) n += weight(ch);
  return n;
}

/**
 * Splits `text` into parts of at most `room` (by `weight`), cutting after a
 * whole line where one ends in the second half of the room (that line break
 * is the boundary between two messages), else mid-line. Never between the
 * two halves of a surrogate pair. Joining the parts (a newline before each
 * part that does not continue a line) gives `text` back exactly.
 */
export function splitArguments(text: string, room: number, weight: Weight = unitWeight): ArgumentsPart[] {
  const chars = [...text];
  const parts: ArgumentsPart[] = [];
  let continuesLine = false;
  for (let i = 0; i < chars.length; ) {
    let used = 0;
    let end = i;
    let lastBreak = -1;
    while (end < chars.length && used + weight(chars[end]!) <= room) {
      if (chars[end] === "\n" && used >= room / 2) lastBreak = end;
      used += weight(chars[end]!);
      end++;
    }
    if (end === i) end = i + 1; // one character heavier than the room: still progress
    if (end < chars.length && lastBreak > i) {
      parts.push({ text: chars.slice(i, lastBreak).join(""), continuesLine });
      continuesLine = false;
      i = lastBreak + 1;
    } else {
      parts.push({ text: chars.slice(i, end).join(""), continuesLine });
      continuesLine = true;
      i = end;
    }
  }
  return parts;
}

/**
 * Where a card's arguments go: in the card itself (no parts) when they fit
 * `room.card`, else split into parts of at most `room.part`, posted before it.
 */
export function layoutArguments(args: string, room: { card: number; part: number }, weight: Weight = unitWeight): ArgumentsPart[] {
  if (weigh(args, weight) <= room.card) return [];
  return splitArguments(args, room.part, weight);
}

const count = (n: number) => n.toLocaleString("en-US");

/** The card's line about its arguments: how long they are, and where they are when not on the card. */
export function argumentsLine(c: Pick<ApprovalCard, "arguments" | "argumentsAbove">): string {
  const n = `${count(c.arguments.length)} character${c.arguments.length === 1 ? "" : "s"}`;
  if (!c.argumentsAbove) return `Arguments (${n}):`;
  return `The arguments (${n}) are in the ${c.argumentsAbove === 1 ? "message" : `${c.argumentsAbove} messages`} above; read them all before you decide.`;
}

/** The first line of an argument part: whose arguments, which part, and whether it goes on with the previous line. */
export function partHeading(c: Pick<ApprovalCard, "id" | "tool">, index: number, parts: readonly ArgumentsPart[]): string {
  const tool = c.tool.length > 80 ? `${c.tool.slice(0, 80)}…` : c.tool;
  return `Arguments for approval ${c.id} (${tool}), part ${index + 1}/${parts.length}${parts[index]!.continuesLine ? ", continuing the line" : ""}:`;
}

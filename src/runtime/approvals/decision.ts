/**
 * Who may decide an approval, and what each party is told: the clicker
 * (refused, already decided) and the waiting turn (the verdict its tool call
 * gets). Pure: the service reads the row and applies these.
 */
import type { ApprovalVerdict } from "../../agent/tools.js";
import type { ApprovalRecord } from "../../store/approvals.js";
import { ARGS_APPROVABLE_MAX } from "./arguments.js";
import type { ApprovalAction } from "./card.js";
import type { Approvers } from "./options.js";

/** One click (or `/approve <id>` typed), as an adapter reports it. */
export interface ApprovalClick {
  id: string;
  action: ApprovalAction;
  platform: string;
  botId: string;
  chatId: string;
  senderId: string;
  senderName?: string;
  /** Listed in ADMIN_USERS. */
  isAdmin: boolean;
}

/** What the clicker is told (privately where the platform can: an alert, an ephemeral message). */
export interface ClickResult {
  ok: boolean;
  text: string;
}

/**
 * Whether the press or typed command comes from the approval's chat. A typed id is the chat's, whatever
 * thread or topic it is typed in: a forum's topics share the group's members, and a Slack slash command
 * carries no thread at all (so `/switchboard approve <id>` must still reach a call asked in a thread).
 * A press is bound to the card's own message by the platform. Anything else reads as unknown: no oracle for ids.
 */
export function inChat(rec: ApprovalRecord, c: ApprovalClick): boolean {
  return rec.platform === c.platform && rec.botId === c.botId && rec.chatId === c.chatId;
}

/** What a card says when a stop abandons its turn: nothing ran, and the message comes back. */
export const RESTARTING = "the gateway is restarting before a decision; your message is answered again when it is back";
/** What a card says when its decision could not be recorded: the call was denied, and the card takes no more presses. */
export const UNRECORDED = "the decision could not be recorded, so nothing was run; send your message again";

/** What a presser is told who does not pass the DM policy (whatever APPROVERS says). */
export const NOT_PAIRED =
  "Only someone this bot already talks to (paired or allowlisted) or an operator can decide a tool call. Send the bot a direct message to ask for access.";
/** What a press on a row nobody waits for is told: its turn ended without a recorded decision, or with a restart. */
export const NOBODY_WAITS = {
  unrecorded:
    "This request is no longer waiting for a decision (an earlier one could not be recorded), so nothing was run. Send your message again and the agent will ask anew.",
  restarted: "This request expired when the gateway restarted, so nothing was run. Send your message again and the agent will ask anew.",
};

/**
 * Whom an "Always" press covers. In a group under APPROVERS=requester, a member decides only their own
 * calls, so their "always" covers only their own later calls (else one member's press would approve
 * everyone's, unseen); an operator's, or one under `admins` or `anyone` (where the presser could decide
 * everyone's calls anyway), covers the chat. In a private chat the requester is the chat.
 */
export function alwaysScope(rec: ApprovalRecord, c: ApprovalClick, approvers: Approvers): "chat" | "requester" {
  return rec.privateChat || approvers !== "requester" || c.isAdmin ? "chat" : "requester";
}

/** A private chat's approval is its requester's; in a group, APPROVERS says who (the requester and operators by default). */
export function mayDecide(rec: ApprovalRecord, c: ApprovalClick, approvers: Approvers): boolean {
  const requester = c.senderId === rec.requesterId;
  if (rec.privateChat) return requester;
  switch (approvers) {
    case "anyone":
      return true;
    case "admins":
      return c.isAdmin;
    default:
      return requester || c.isAdmin;
  }
}

/** The refusal of a clicker who may not decide, naming who may. */
export function onlyWhoMayDecide(rec: ApprovalRecord, approvers: Approvers): string {
  const who =
    rec.privateChat || approvers === "requester"
      ? `${rec.requesterName ?? "the person who asked"}${rec.privateChat ? "" : " or an operator"}`
      : approvers === "admins"
        ? "an operator"
        : "someone in this chat";
  return `Only ${who} can decide this request.`;
}

/** What a click on an approval that is no longer pending is told. */
export function alreadyDecided(rec: ApprovalRecord): string {
  switch (rec.status) {
    case "approved":
      return `Already approved by ${rec.decidedByName ?? "someone"}.`;
    case "denied":
      return `Already denied by ${rec.decidedByName ?? "someone"}.`;
    case "expired":
      return "This request has expired.";
    default:
      return "This request was cancelled.";
  }
}

/** The verdict a decided approval gives the waiting tool call. */
export function verdictOf(rec: ApprovalRecord, reason?: string): ApprovalVerdict {
  const by = rec.decidedByName ?? rec.decidedById ?? "someone";
  if (rec.status === "approved") return { decision: "approve", note: `approved by ${by}${rec.always ? " (always in this chat)" : ""}` };
  if (rec.status === "denied") return { decision: "deny", note: `denied by ${by}` };
  return { decision: "deny", note: rec.status === "expired" ? `expired${reason ? `: ${reason}` : ""}` : `cancelled${reason ? `: ${reason}` : ""}` };
}

/** Nobody may approve what they cannot read in full, and this much would flood the chat: the call is denied without asking. */
export function tooLongVerdict(characters: number): ApprovalVerdict {
  return {
    decision: "deny",
    note: `its arguments are ${characters} characters, more than a person can be shown to approve (at most ${ARGS_APPROVABLE_MAX}); make the call with smaller arguments, or several calls`,
  };
}

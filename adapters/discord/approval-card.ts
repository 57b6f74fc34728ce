/**
 * Approval cards on Discord: a channel message with an action row of three
 * buttons (custom_id `approval:<action>:<id>`). A press is an
 * INTERACTION_CREATE of type 3 (MESSAGE_COMPONENT), which Discord wants
 * answered within 3 s: decided within 1.5 s (the usual case), it is answered
 * with one ephemeral message (type 4, flags 64) only the presser sees;
 * otherwise it is acknowledged with type 6 (DEFERRED_UPDATE_MESSAGE) and the
 * outcome follows as an ephemeral follow-up. Once decided, the card is edited
 * in place with its buttons removed.
 *
 * The arguments are shown whole, in a code block no argument text can close
 * (a run of three backticks gets a zero-width space inside it, since Discord
 * has no longer fences): in the card when it fits Discord's 2000 characters,
 * else in numbered parts posted before the card, which then points up to them.
 */
import type { REST } from "discord.js";
import { argumentsLine, BUTTONS, cardTitle, decodeAction, HEADING_ROOM, layoutArguments, partHeading, STATUS_ROOM, statusLine, type Weight } from "../types.js";
import type { Logger } from "../../src/log.js";
import { AdapterError, type AdapterContext, type ApprovalCard, type ReplyAddress, type SentMessage } from "../types.js";
import { toAdapterError } from "./errors.js";
import { decodeReplyAddress, isSnowflake } from "./ids.js";
import { DISCORD_LIMITS } from "./limits.js";

const EPHEMERAL = 64;
const STYLE = { approve: 3, deny: 4, always: 2 } as const;

export function cardComponents(card: ApprovalCard): unknown[] {
  if (card.state !== "pending") return [];
  return [{ type: 1, components: BUTTONS.map((b) => ({ type: 2, style: STYLE[b.action], label: b.label, custom_id: `approval:${b.action}:${card.id}` })) }];
}

const LIMIT = DISCORD_LIMITS.maxTextLength;
const FENCE = 8; // "```\n" and "\n```"

/** Inside a code block: no run of three backticks is left to end it early. */
const fenced = (s: string) => `\`\`\`\n${s.replace(/``(?=`)/g, "``\u200b")}\n\`\`\``;
/** A backtick may take a zero-width space with it (fenced). */
const weight: Weight = (ch) => (ch === "`" ? 2 : ch.length);
/** Lines outside the code block: no mention in them may ping anyone (allowed_mentions also parses none). */
const defused = (s: string) => s.replace(/@(everyone|here)/g, "@\u200b$1");

/** The card's arguments: in the card, or (parts) in the messages before it. Same answer when shown and when edited. */
function layout(card: ApprovalCard) {
  const fixed = cardTitle(card).length + argumentsLine({ ...card, argumentsAbove: 1 }).length + FENCE + STATUS_ROOM;
  return layoutArguments(card.arguments, { card: LIMIT - fixed, part: LIMIT - HEADING_ROOM - FENCE }, weight);
}

function content(card: ApprovalCard, above: number): string {
  const c = above ? { ...card, argumentsAbove: above } : card;
  const args = above ? "" : `\n${fenced(card.arguments)}`;
  return `${defused(cardTitle(c))}\n${argumentsLine(c)}${args}\n${defused(statusLine(c))}`;
}

function target(to: ReplyAddress) {
  const t = decodeReplyAddress(to);
  if ("error" in t) throw new AdapterError("discord", "Rejected", t.error);
  return t;
}

/** How many parts of arguments go before the card (the outbound door sends each, then the card). */
export function discordCardParts(card: ApprovalCard): number {
  return layout(card).length;
}

/** Part `index` of the arguments, before the card: Approve is offered only once all of them are in the channel. */
export async function sendDiscordCardPart(rest: REST, to: ReplyAddress, card: ApprovalCard, index: number): Promise<SentMessage> {
  const t = target(to);
  const parts = layout(card);
  const p = parts[index];
  if (!p) throw new AdapterError("discord", "Rejected", `the card has ${parts.length} parts of arguments, not part ${index + 1}`);
  try {
    const m = (await rest.post(`/channels/${t.channelId}/messages`, {
      body: { content: `${partHeading(card, index, parts)}\n${fenced(p.text)}`, allowed_mentions: { parse: [] } },
    })) as { id: string };
    return { messageId: String(m.id) };
  } catch (err) {
    throw toAdapterError(err, "POST /channels/:id/messages");
  }
}

/** The card with its buttons, pointing up to the parts posted before it. */
export async function sendDiscordCard(rest: REST, to: ReplyAddress, card: ApprovalCard): Promise<SentMessage> {
  const t = target(to);
  try {
    const m = (await rest.post(`/channels/${t.channelId}/messages`, {
      body: { content: content(card, layout(card).length), components: cardComponents(card), allowed_mentions: { parse: [] } },
    })) as { id: string };
    return { messageId: String(m.id) };
  } catch (err) {
    throw toAdapterError(err, "POST /channels/:id/messages");
  }
}

export async function editDiscordCard(rest: REST, to: ReplyAddress, messageId: string, card: ApprovalCard): Promise<void> {
  const t = target(to);
  try {
    await rest.patch(`/channels/${t.channelId}/messages/${messageId}`, {
      body: { content: content(card, layout(card).length), components: cardComponents(card), allowed_mentions: { parse: [] } },
    });
  } catch (err) {
    throw toAdapterError(err, "PATCH /channels/:id/messages/:id");
  }
}

/** Whether a dispatch is a press of one of our approval buttons. */
export function isApprovalPress(d: Record<string, unknown>): boolean {
  const data = d.data as { custom_id?: unknown; component_type?: unknown } | undefined;
  return d.type === 3 && typeof d.token === "string" && isSnowflake(d.id) && typeof data?.custom_id === "string" && data.custom_id.startsWith("approval:");
}

/** Past this the press is acknowledged first (type 6) and answered by a follow-up; Discord's window is 3 s. */
const ANSWER_WITHIN_MS = 1_500;

export async function handleDiscordPress(rest: REST, applicationId: string, d: Record<string, unknown>, ctx: AdapterContext, log: Logger): Promise<void> {
  const id = String(d.id);
  const token = String(d.token);
  const decoded = decodeAction(String((d.data as { custom_id?: unknown }).custom_id));
  const member = d.member as { nick?: string | null; user?: Record<string, unknown> } | undefined;
  const user = (member?.user ?? d.user) as { id?: string; username?: string; global_name?: string | null } | undefined;
  const decide = async (): Promise<{ ok: boolean; text: string }> => {
    if (!decoded || !user?.id) return { ok: false, text: "This button is not one of this bot's." };
    try {
      const name = member?.nick || user.global_name || user.username;
      return (
        (await ctx.approvalClick?.({
          id: decoded.id,
          action: decoded.action,
          chatId: String(d.channel_id),
          senderId: user.id,
          ...(name && { senderName: name }),
        })) ?? { ok: false, text: "Approvals are not enabled here." }
      );
    } catch (err) {
      ctx.reportError?.("discord-approval", err);
      log.error({ err: err instanceof Error ? err.message : String(err) }, "discord: an approval press could not be handled");
      return { ok: false, text: "That could not be recorded; please try again." };
    }
  };
  const decision = decide();
  let timer: NodeJS.Timeout | undefined;
  const quick = await Promise.race([decision, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ANSWER_WITHIN_MS)))]);
  clearTimeout(timer);
  const body = (r: { text: string }) => ({ content: r.text, flags: EPHEMERAL, allowed_mentions: { parse: [] } });
  try {
    // Decided in time (the usual case): one call answers the press, privately (type 4, ephemeral).
    if (quick) return void (await rest.post(`/interactions/${id}/${token}/callback`, { body: { type: 4, data: body(quick) }, auth: false }));
    await rest.post(`/interactions/${id}/${token}/callback`, { body: { type: 6 }, auth: false });
  } catch (err) {
    log.warn({ err: toAdapterError(err, "POST /interactions/:id/:token/callback").message }, "discord: could not answer a button press");
    return;
  }
  try {
    await rest.post(`/webhooks/${applicationId}/${token}`, { body: body(await decision), auth: false });
  } catch (err) {
    log.warn({ err: toAdapterError(err, "POST /webhooks/:app/:token").message }, "discord: telling the presser the outcome failed");
  }
}

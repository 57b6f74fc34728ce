/**
 * Approval cards on Telegram: the card is a message with an inline keyboard
 * whose buttons carry `approval:<action>:<id>` as callback_data (64 bytes at
 * most); a press arrives as a `callback_query`, which is always answered with
 * answerCallbackQuery (a refusal as an alert only the presser sees). Once
 * decided, the card is edited in place and its keyboard removed.
 *
 * The arguments are shown whole, in a <pre> block: in the card when the
 * card's visible text fits Telegram's 4096 characters (counted after the
 * HTML entities are parsed, so escaping costs nothing), else in numbered
 * parts sent before the card, which then points up to them.
 */
import type { Api } from "grammy";
import type { CallbackQuery } from "grammy/types";
import {
  argumentsLine,
  BUTTONS,
  cardTitle,
  decodeAction,
  encodeAction,
  HEADING_ROOM,
  layoutArguments,
  partHeading,
  STATUS_ROOM,
  statusLine,
} from "../types.js";
import type { AdapterContext, ApprovalCard, ReplyAddress, SentMessage } from "../types.js";
import type { Logger } from "../../src/log.js";
import { escapeTelegramHtml } from "./format.js";
import { toAdapterError } from "./errors.js";
import { decodeReplyAddress } from "./ids.js";
import { AdapterError } from "../types.js";
import { TELEGRAM_LIMITS } from "./limits.js";

const keyboard = (card: ApprovalCard) => ({ inline_keyboard: [BUTTONS.map((b) => ({ text: b.label, callback_data: encodeAction(b.action, card.id) }))] });

const LIMIT = TELEGRAM_LIMITS.maxTextLength;

/** The card's arguments: in the card, or (parts) in the messages before it. Same answer when shown and when edited. */
function layout(card: ApprovalCard) {
  const fixed = cardTitle(card).length + argumentsLine({ ...card, argumentsAbove: 1 }).length + STATUS_ROOM;
  return layoutArguments(card.arguments, { card: LIMIT - fixed, part: LIMIT - HEADING_ROOM });
}

function html(card: ApprovalCard, above: number): string {
  const c = above ? { ...card, argumentsAbove: above } : card;
  const args = above ? "" : `\n<pre>${escapeTelegramHtml(card.arguments)}</pre>`;
  return `<b>${escapeTelegramHtml(cardTitle(c))}</b>\n${escapeTelegramHtml(argumentsLine(c))}${args}\n${escapeTelegramHtml(statusLine(c))}`;
}

function target(to: ReplyAddress) {
  const t = decodeReplyAddress(to);
  if ("error" in t) throw new AdapterError("telegram", "Rejected", t.error);
  return t;
}

/** How many parts of arguments go before the card (the outbound door sends each, then the card). */
export function telegramCardParts(card: ApprovalCard): number {
  return layout(card).length;
}

/** Part `index` of the arguments, before the card: Approve is offered only once all of them are in the chat. */
export async function sendTelegramCardPart(api: Api, to: ReplyAddress, card: ApprovalCard, index: number): Promise<SentMessage> {
  const t = target(to);
  const parts = layout(card);
  const p = parts[index];
  if (!p) throw new AdapterError("telegram", "Rejected", `the card has ${parts.length} parts of arguments, not part ${index + 1}`);
  try {
    const m = await api.sendMessage(t.chat_id, `${escapeTelegramHtml(partHeading(card, index, parts))}\n<pre>${escapeTelegramHtml(p.text)}</pre>`, {
      parse_mode: "HTML",
      ...where(t),
    });
    return { messageId: String(m.message_id) };
  } catch (err) {
    throw toAdapterError(err, "sendMessage");
  }
}

/** The card with its buttons, pointing up to the parts sent before it. */
export async function sendTelegramCard(api: Api, to: ReplyAddress, card: ApprovalCard): Promise<SentMessage> {
  const t = target(to);
  try {
    const m = await api.sendMessage(t.chat_id, html(card, layout(card).length), { parse_mode: "HTML", reply_markup: keyboard(card), ...where(t) });
    return { messageId: String(m.message_id) };
  } catch (err) {
    throw toAdapterError(err, "sendMessage");
  }
}

function where(t: { message_thread_id?: number }): { message_thread_id?: number } {
  return t.message_thread_id !== undefined ? { message_thread_id: t.message_thread_id } : {};
}

export async function editTelegramCard(api: Api, to: ReplyAddress, messageId: string, card: ApprovalCard): Promise<void> {
  const t = target(to);
  try {
    // No reply_markup: Telegram drops the keyboard, so a decided card has no buttons left.
    await api.editMessageText(t.chat_id, Number(messageId), html(card, layout(card).length), {
      parse_mode: "HTML",
      ...(card.state === "pending" && { reply_markup: keyboard(card) }),
    });
  } catch (err) {
    const e = toAdapterError(err, "editMessageText");
    if (/not modified/i.test(e.message)) return;
    throw e;
  }
}

/** One callback_query: decoded, decided by the gateway, and always answered (Telegram shows a spinner until then). */
export async function handleTelegramCallback(api: Api, q: CallbackQuery, ctx: AdapterContext, log: Logger): Promise<void> {
  const action = q.data ? decodeAction(q.data) : undefined;
  let answer: { text: string; show_alert: boolean };
  if (!action || !q.message) answer = { text: "This button is not one of this bot's.", show_alert: true };
  else {
    try {
      const name = [q.from.first_name, q.from.last_name].filter(Boolean).join(" ") || q.from.username;
      const r = (await ctx.approvalClick?.({
        id: action.id,
        action: action.action,
        chatId: String(q.message.chat.id),
        senderId: String(q.from.id),
        ...(name && { senderName: name }),
      })) ?? { ok: false, text: "Approvals are not enabled here." };
      answer = { text: r.text, show_alert: !r.ok };
    } catch (err) {
      ctx.reportError?.("telegram-callback", err);
      log.error({ err: err instanceof Error ? err.message : String(err) }, "telegram: an approval click could not be handled");
      answer = { text: "That could not be recorded; please try again.", show_alert: true };
    }
  }
  try {
    await api.answerCallbackQuery(q.id, { text: answer.text.slice(0, 200), show_alert: answer.show_alert });
  } catch (err) {
    log.warn({ err: toAdapterError(err, "answerCallbackQuery").message }, "telegram: answering a callback query failed");
  }
}

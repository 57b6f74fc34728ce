/**
 * The outbound half of the Telegram adapter, over grammY's Api.
 *
 * Every method makes exactly one Bot API call and turns any failure into an
 * AdapterError (errors.ts): retrying, pacing and chunking are the gateway's
 * (OutboundScheduler, and format.ts, which renders the agent's Markdown as
 * Telegram HTML before splitting it), so the sink gets one rendered chunk at
 * a time and sends it with parse_mode HTML; or, with `plain`, as text
 * without parse_mode (the fallback after "can't parse entities").
 */
import { GrammyError, type Api } from "grammy";
import type { ReactionTypeEmoji } from "grammy/types";
import { AdapterError, type AdapterSink, type ReplyAddress, type SendOptions, type SentMessage } from "../types.js";
import { toAdapterError } from "./errors.js";
import { decodeReplyAddress, parseMessageId, type TelegramTarget } from "./ids.js";

export interface TelegramSinkOptions {
  /** The bot's id (known from the token before getMe), to refuse addresses meant for another bot. */
  botId: () => string;
}

/** The Telegram chat an address points at, refused when it is malformed or meant for another bot. */
function targetOf(to: ReplyAddress, me: string): TelegramTarget {
  const t = decodeReplyAddress(to);
  if ("error" in t) throw new AdapterError("telegram", "Rejected", t.error);
  if (to.botId !== me)
    throw new AdapterError(
      "telegram",
      "Rejected",
      `reply address is for Telegram bot ${to.botId} but this adapter is bot ${me}: route it to that bot's adapter`,
    );
  return t;
}

function messageId(id: string): number {
  const n = parseMessageId(id);
  if (n === undefined) throw new AdapterError("telegram", "Rejected", `"${id}" is not a Telegram message id (a positive integer from send())`);
  return n;
}

function nonEmpty(text: string): string {
  // Telegram answers 400 "message text is empty"; say why before calling.
  if (text.trim() === "") throw new AdapterError("telegram", "Rejected", "cannot send an empty message: the chunk has no visible text after rendering");
  return text;
}

async function call<T>(method: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toAdapterError(err, method);
  }
}

/** Groups upgraded to a supergroup since their replies were addressed: old chat id -> new. */
type Migrations = Map<number | string, number>;

/** One sendMessage to `t`, or to the supergroup its group became (learned from the 400 that says so). */
async function sendMessage(api: Api, migrated: Migrations, t: TelegramTarget, html: string, opts?: SendOptions): Promise<SentMessage> {
  const sendTo = (chatId: number | string, quote: boolean) =>
    api.sendMessage(chatId, html, {
      ...(!opts?.plain && { parse_mode: "HTML" as const }),
      ...(t.message_thread_id !== undefined && { message_thread_id: t.message_thread_id }),
      // The quoted message may be deleted by the time the answer is ready;
      // the answer still matters more than the quote.
      ...(quote &&
        t.reply_to_message_id !== undefined && {
          reply_parameters: { message_id: t.reply_to_message_id, allow_sending_without_reply: true },
        }),
    });
  const known = migrated.get(t.chat_id);
  let msg: Awaited<ReturnType<typeof sendTo>>;
  try {
    // The quoted message lives in the old chat: a reply into the supergroup goes without the quote.
    msg = await sendTo(known ?? t.chat_id, known === undefined);
  } catch (err) {
    // 400 with migrate_to_chat_id: the group became a supergroup; the reply goes there.
    const next = err instanceof GrammyError ? err.parameters.migrate_to_chat_id : undefined;
    if (next === undefined || known !== undefined) throw toAdapterError(err, "sendMessage");
    migrated.set(t.chat_id, next);
    msg = await call("sendMessage", () => sendTo(next, false));
  }
  return { messageId: String(msg.message_id) };
}

export function createTelegramSink(api: Api, opts: TelegramSinkOptions): AdapterSink {
  const target = (to: ReplyAddress): TelegramTarget => targetOf(to, opts.botId());
  const migrated: Migrations = new Map();

  return {
    async send(to, text, opts?: SendOptions): Promise<SentMessage> {
      const t = target(to);
      return sendMessage(api, migrated, t, nonEmpty(text), opts);
    },

    async edit(to, id, text, opts): Promise<void> {
      const t = target(to);
      const mid = messageId(id);
      const html = nonEmpty(text);
      try {
        await api.editMessageText(t.chat_id, mid, html, opts?.plain ? {} : { parse_mode: "HTML" });
      } catch (err) {
        // A streamed edit that repeats the current text is already where the
        // caller wants it; Telegram reports it as a 400.
        if (err instanceof GrammyError && err.error_code === 400 && /message is not modified/i.test(err.description)) return;
        throw toAdapterError(err, "editMessageText");
      }
    },

    async typing(to): Promise<void> {
      const t = target(to);
      // Failures are thrown, not swallowed: the scheduler treats typing as
      // best effort and is the one place that decides to log and move on.
      await call("sendChatAction", () =>
        api.sendChatAction(migrated.get(t.chat_id) ?? t.chat_id, "typing", t.message_thread_id !== undefined ? { message_thread_id: t.message_thread_id } : {}),
      );
    },

    async react(to, id, emoji): Promise<void> {
      const t = target(to);
      const mid = messageId(id);
      // Telegram accepts only its fixed set of reaction emoji; others come back as 400 REACTION_INVALID (Rejected).
      const reaction: ReactionTypeEmoji = { type: "emoji", emoji: emoji as ReactionTypeEmoji["emoji"] };
      await call("setMessageReaction", () => api.setMessageReaction(t.chat_id, mid, [reaction]));
    },

    async leave(chatId): Promise<void> {
      // Telegram chat ids are integers (a group's negative); anything else never came from an envelope.
      if (!/^-?\d+$/.test(chatId)) throw new AdapterError("telegram", "Rejected", `"${chatId}" is not a Telegram chat id`);
      await call("leaveChat", () => api.leaveChat(Number(chatId)));
    },
  };
}

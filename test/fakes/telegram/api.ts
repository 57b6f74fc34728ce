/**
 * Bot API methods of the Telegram fake that only touch the in-memory world
 * (getUpdates and the webhook methods live in the server, telegram.ts).
 * Errors use Telegram's wording so SDK error handling sees what it would see.
 */
import { jsonParam, nowSec } from "../shared.js";
import { applyParseMode } from "./format.js";
import { shallow, type TgStore } from "./store.js";
import { TgApiError, type TgChat, type TgEntity, type TgMessage, type TgSentMessage } from "./types.js";

export type MethodHandler = (params: Record<string, unknown>) => unknown;

const CHAT_ACTIONS = new Set([
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "upload_document",
  "choose_sticker",
  "find_location",
  "record_video_note",
  "upload_video_note",
]);
const MAX_TEXT = 4096;

const bad = (description: string): TgApiError => new TgApiError(400, `Bad Request: ${description}`);

export function requireChat(store: TgStore, chatId: unknown): TgChat {
  if (chatId === undefined || chatId === null || chatId === "") throw bad("chat_id is empty");
  const chat = store.findChat(chatId);
  if (!chat) throw bad("chat not found");
  const migratedTo = store.migrations.get(chat.id);
  // As the Bot API answers any call for a group that became a supergroup.
  if (migratedTo !== undefined) throw new TgApiError(400, "Bad Request: group chat was upgraded to a supergroup chat", { migrate_to_chat_id: migratedTo });
  return chat;
}

/** A chat the bot left answers every call as the Bot API does: 403, "bot is not a member". */
function requireMember(store: TgStore, chat: TgChat): TgChat {
  if (store.left.has(chat.id))
    throw new TgApiError(
      403,
      `Forbidden: bot is not a member of the ${chat.type === "channel" ? "channel" : chat.type === "supergroup" ? "supergroup" : "group"} chat`,
    );
  return chat;
}

function optionalInt(v: unknown): number | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

function formatText(params: Record<string, unknown>, field: "text" | "caption"): { text: string; entities: TgEntity[] } {
  const raw = params[field];
  const text = raw === undefined || raw === null ? "" : String(raw);
  const given = jsonParam<TgEntity[]>(params[field === "text" ? "entities" : "caption_entities"]);
  const parseMode = typeof params.parse_mode === "string" && params.parse_mode ? params.parse_mode : undefined;
  const f = given ? { text, entities: given } : applyParseMode(text, parseMode);
  if (field === "text" && f.text.trim().length === 0) throw bad("message text is empty");
  if (f.text.length > MAX_TEXT) throw bad("message is too long");
  return f;
}

export interface ApiDeps {
  store: TgStore;
  sent: TgSentMessage[];
  /** Called after any state change the tests may wait for. */
  changed: () => void;
}

export function createApiMethods({ store, sent, changed }: ApiDeps): Record<string, MethodHandler> {
  const bot = store.bot;

  const resolveReply = (chat: TgChat, params: Record<string, unknown>): TgMessage | undefined => {
    const rp = jsonParam<{ message_id?: number; chat_id?: unknown; allow_sending_without_reply?: boolean }>(params.reply_parameters);
    const id = optionalInt(rp?.message_id ?? params.reply_to_message_id);
    if (id === undefined) return undefined;
    const inChat = rp?.chat_id !== undefined ? requireChat(store, rp.chat_id) : chat;
    const target = store.getMessage(inChat.id, id);
    const allow = rp?.allow_sending_without_reply ?? params.allow_sending_without_reply === true;
    if (!target && !allow) throw bad("message to be replied not found");
    return target;
  };

  const threadFor = (chat: TgChat, params: Record<string, unknown>): number | undefined => {
    const threadId = optionalInt(params.message_thread_id);
    if (threadId === undefined) return undefined;
    if (chat.type === "private") return undefined;
    if (chat.is_forum && threadId !== 1 && !store.topics.get(chat.id)?.has(threadId)) throw bad("message thread not found");
    return threadId;
  };

  const sendMessage: MethodHandler = (p) => {
    const chat = requireMember(store, requireChat(store, p.chat_id));
    const { text, entities } = formatText(p, "text");
    const threadId = threadFor(chat, p);
    const replyTo = resolveReply(chat, p);
    const markup = jsonParam(p.reply_markup);
    const msg: TgMessage = {
      message_id: store.nextMessageId(chat.id),
      from: bot,
      chat,
      date: nowSec(),
      text,
    };
    if (threadId !== undefined) {
      msg.message_thread_id = threadId;
      if (chat.is_forum) msg.is_topic_message = true;
    }
    if (entities.length) msg.entities = entities;
    if (replyTo) msg.reply_to_message = shallow(replyTo);
    if (markup !== undefined) msg.reply_markup = markup;
    store.storeMessage(msg);
    const rawText = String(p.text);
    const rec: TgSentMessage = {
      chatId: chat.id,
      chatType: chat.type,
      messageId: msg.message_id,
      rawText,
      text,
      entities,
      history: [rawText],
      message: msg,
      at: Date.now(),
    };
    if (threadId !== undefined) rec.threadId = threadId;
    if (typeof p.parse_mode === "string") rec.parseMode = p.parse_mode;
    if (replyTo) rec.replyToMessageId = replyTo.message_id;
    if (markup !== undefined) rec.replyMarkup = markup;
    sent.push(rec);
    changed();
    return msg;
  };

  const editMessageText: MethodHandler = (p) => {
    if (p.inline_message_id !== undefined) throw bad("message to edit not found");
    const chat = requireChat(store, p.chat_id);
    const id = optionalInt(p.message_id);
    if (id === undefined) throw bad("message identifier is not specified");
    const msg = store.getMessage(chat.id, id);
    if (!msg) throw bad("message to edit not found");
    if (msg.from?.id !== bot.id) throw bad("message can't be edited");
    const { text, entities } = formatText(p, "text");
    const markup = jsonParam(p.reply_markup);
    const sameEntities = JSON.stringify(msg.entities ?? []) === JSON.stringify(entities);
    const sameMarkup = JSON.stringify(msg.reply_markup ?? null) === JSON.stringify(markup ?? null);
    if (msg.text === text && sameEntities && sameMarkup)
      throw bad(
        "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
      );
    msg.text = text;
    if (entities.length) msg.entities = entities;
    else delete msg.entities;
    if (markup !== undefined) msg.reply_markup = markup;
    else delete msg.reply_markup;
    msg.edit_date = nowSec();
    const rec = sent.find((s) => s.chatId === chat.id && s.messageId === id);
    if (rec) {
      rec.rawText = String(p.text);
      rec.text = text;
      rec.entities = entities;
      rec.history.push(rec.rawText);
      if (typeof p.parse_mode === "string") rec.parseMode = p.parse_mode;
      else delete rec.parseMode;
    }
    changed();
    return msg;
  };

  const sendChatAction: MethodHandler = (p) => {
    const chat = requireMember(store, requireChat(store, p.chat_id));
    const action = String(p.action ?? "");
    if (!CHAT_ACTIONS.has(action)) throw bad("wrong parameter action in request");
    threadFor(chat, p);
    return true;
  };

  const commandsKey = (p: Record<string, unknown>): string => `${JSON.stringify(jsonParam(p.scope) ?? { type: "default" })}|${String(p.language_code ?? "")}`;

  const setMyCommands: MethodHandler = (p) => {
    const list = jsonParam<{ command?: unknown; description?: unknown }[]>(p.commands);
    if (!Array.isArray(list)) throw bad('parameter "commands" is required');
    if (list.length > 100) throw bad("too many commands");
    const clean = list.map((c) => {
      const command = String(c.command ?? "");
      const description = String(c.description ?? "");
      if (!/^[a-z0-9_]{1,32}$/.test(command)) throw bad("BOT_COMMAND_INVALID");
      if (description.length < 1 || description.length > 256) throw bad("BOT_COMMAND_DESCRIPTION_INVALID");
      return { command, description };
    });
    store.commands.set(commandsKey(p), clean);
    changed();
    return true;
  };

  const answerCallbackQuery: MethodHandler = (p) => {
    const id = String(p.callback_query_id ?? "");
    const q = store.callbackQueries.get(id);
    if (!q || q.answered) throw bad("query is too old and response timeout expired or query ID is invalid");
    q.answered = true;
    q.answer = { ...p };
    changed();
    return true;
  };

  const getFile: MethodHandler = (p) => {
    const f = store.files.get(String(p.file_id ?? ""));
    if (!f) throw bad("invalid file_id");
    return { file_id: f.file_id, file_unique_id: f.file_unique_id, file_size: f.data.length, file_path: f.file_path };
  };

  // leaveChat: groups, supergroups and channels; a private chat has no membership to give up.
  const leaveChat: MethodHandler = (p) => {
    const chat = requireMember(store, requireChat(store, p.chat_id));
    if (chat.type === "private") throw bad("chat member status can't be changed in private chats");
    store.left.add(chat.id);
    changed();
    return true;
  };

  return {
    leaveChat,
    getMe: () => ({
      ...bot,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
      can_connect_to_business: false,
      has_main_web_app: false,
    }),
    sendMessage,
    editMessageText,
    sendChatAction,
    setMyCommands,
    getMyCommands: (p) => store.commands.get(commandsKey(p)) ?? [],
    deleteMyCommands: (p) => {
      store.commands.delete(commandsKey(p));
      return true;
    },
    answerCallbackQuery,
    getFile,
    getChat: (p) => ({ ...requireChat(store, p.chat_id), accent_color_id: 0, max_reaction_count: 11 }),
    setMessageReaction: (p) => {
      const chat = requireChat(store, p.chat_id);
      if (!store.getMessage(chat.id, Number(p.message_id))) throw bad("message to react not found");
      return true;
    },
  };
}

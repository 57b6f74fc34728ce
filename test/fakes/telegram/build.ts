/**
 * Builders for the updates users cause: messages (DM, group, supergroup,
 * forum topic), replies, mentions and commands with the entities Telegram
 * attaches, edits, media and callback queries. Building registers the chat and
 * message in the fake's world but does not deliver; FakeTelegram.inject does.
 */
import { randomUUID } from "node:crypto";
import { nowSec } from "../shared.js";
import { shallow, type TgStore } from "./store.js";
import type { TgChat, TgEntity, TgMessage, TgPhotoSize, TgUpdate, TgUser } from "./types.js";

export interface UserMessageOptions {
  /** The chat object (registered on first use) or the id of a registered chat. */
  chat: TgChat | number;
  from: TgUser;
  text?: string;
  /** Forum topic / message thread id. In forum supergroups this also sets is_topic_message. */
  threadId?: number;
  /** Message id (same chat) or message object this message replies to. */
  replyTo?: number | TgMessage;
  /** Entities to use instead of the auto-detected bot_command / mention / url ones. */
  entities?: TgEntity[];
  /**
   * Makes it a forward: the user forwarded a message written by this user,
   * posted in this chat (a channel or group), or by a user who hides their
   * account (a name). Sets forward_origin as Bot API 7.0+ does.
   */
  forwardFrom?: TgUser | TgChat | string;
  /** Extra fields merged into the message object. */
  extra?: Record<string, unknown>;
}

export interface MediaOptions extends Omit<UserMessageOptions, "text" | "entities"> {
  caption?: string;
  /** File content served by getFile + /file/bot<token>/<path>. */
  data?: Buffer;
}

/** Finds the entities Telegram's servers attach to plain user text. */
export function detectEntities(text: string): TgEntity[] {
  const out: TgEntity[] = [];
  const cmd = /(^|\s)(\/[a-zA-Z0-9_]{1,32}(?:@[a-zA-Z0-9_]{3,32})?)(?=$|\s|[.,!?])/g;
  for (const m of text.matchAll(cmd)) {
    out.push({ type: "bot_command", offset: m.index + m[1]!.length, length: m[2]!.length });
  }
  const mention = /(^|[^\w/@])(@[a-zA-Z0-9_]{4,32})\b/g;
  for (const m of text.matchAll(mention)) {
    const offset = m.index + m[1]!.length;
    if (!out.some((e) => offset >= e.offset && offset < e.offset + e.length)) out.push({ type: "mention", offset, length: m[2]!.length });
  }
  for (const m of text.matchAll(/https?:\/\/[^\s]+/g)) out.push({ type: "url", offset: m.index, length: m[0].length });
  return out.sort((a, b) => a.offset - b.offset);
}

/** MessageOrigin of a forward: user, hidden_user, chat or channel. */
function forwardOrigin(from: TgUser | TgChat | string, date: number): Record<string, unknown> {
  if (typeof from === "string") return { type: "hidden_user", date, sender_user_name: from };
  if ("first_name" in from && "is_bot" in from) return { type: "user", date, sender_user: from };
  const chat = from as TgChat;
  return chat.type === "channel" ? { type: "channel", date, chat, message_id: 1 } : { type: "chat", date, sender_chat: chat };
}

export class UpdateBuilder {
  private nextUpdateId = 1;

  constructor(private readonly store: TgStore) {}

  reset(): void {
    this.nextUpdateId = 1;
  }

  /** Assigns an update_id (keeps one that is set and larger than the counter). */
  stamp(update: Partial<TgUpdate>): TgUpdate {
    const id = typeof update.update_id === "number" ? update.update_id : this.nextUpdateId;
    this.nextUpdateId = Math.max(this.nextUpdateId, id + 1);
    return { ...update, update_id: id } as TgUpdate;
  }

  // -------------------------------------------------- users and chats

  user(firstName: string, extra: Partial<TgUser> = {}): TgUser {
    return {
      id: this.store.newUserId(),
      is_bot: false,
      first_name: firstName,
      username: firstName.toLowerCase().replace(/[^a-z0-9_]/g, ""),
      language_code: "en",
      ...extra,
    };
  }

  privateChat(user: TgUser): TgChat {
    const chat: TgChat = { id: user.id, type: "private", first_name: user.first_name };
    if (user.username) chat.username = user.username;
    if (user.last_name) chat.last_name = user.last_name;
    return this.store.addChat(chat);
  }

  group(title: string, id = -(4_000_000_000 + Math.floor(Math.random() * 1e8))): TgChat {
    return this.store.addChat({ id, type: "group", title });
  }

  supergroup(title: string, opts: { forum?: boolean; id?: number; username?: string } = {}): TgChat {
    const id = opts.id ?? -(1_000_000_000_000 + Math.floor(Math.random() * 1e9));
    const chat: TgChat = { id, type: "supergroup", title };
    if (opts.forum) chat.is_forum = true;
    if (opts.username) chat.username = opts.username;
    return this.store.addChat(chat);
  }

  /** Creates a forum topic (the service message Telegram posts) and returns its message_thread_id. */
  forumTopic(chat: TgChat, name: string, creator?: TgUser): number {
    const c = this.store.addChat(chat);
    const id = this.store.nextMessageId(c.id);
    const msg: TgMessage = {
      message_id: id,
      message_thread_id: id,
      chat: c,
      date: nowSec(),
      forum_topic_created: { name, icon_color: 7322096 },
      is_topic_message: true,
    };
    if (creator) msg.from = creator;
    this.store.storeMessage(msg);
    this.store.addTopic(c.id, id);
    return id;
  }

  /**
   * A basic group becomes a supergroup (Telegram gives it a new id): the
   * service message with migrate_to_chat_id in the old chat, then the one
   * with migrate_from_chat_id in the new chat, as Telegram sends them. From
   * then on every call for the old id gets 400 with migrate_to_chat_id.
   */
  migrateToSupergroup(old: TgChat, by: TgUser, newId = -(1_000_000_000_000 + Math.floor(Math.random() * 1e9))): { supergroup: TgChat; updates: TgUpdate[] } {
    const oldChat = this.store.addChat(old);
    const supergroup = this.store.addChat({ id: newId, type: "supergroup", ...(oldChat.title ? { title: oldChat.title } : {}) });
    const inOld: TgMessage = { message_id: this.store.nextMessageId(oldChat.id), from: by, chat: oldChat, date: nowSec(), migrate_to_chat_id: newId };
    const inNew: TgMessage = { message_id: this.store.nextMessageId(newId), from: by, chat: supergroup, date: nowSec(), migrate_from_chat_id: oldChat.id };
    this.store.storeMessage(inOld);
    this.store.storeMessage(inNew);
    this.store.migrations.set(oldChat.id, newId);
    return { supergroup, updates: [this.stamp({ message: inOld }), this.stamp({ message: inNew })] };
  }

  // -------------------------------------------------- messages

  private baseMessage(o: Omit<UserMessageOptions, "text" | "entities">): TgMessage {
    const chat = typeof o.chat === "number" ? this.store.chats.get(o.chat) : this.store.addChat(o.chat);
    if (!chat) throw new Error(`FakeTelegram: unknown chat ${String(o.chat)}; pass the chat object once to register it`);
    const msg: TgMessage = { message_id: this.store.nextMessageId(chat.id), from: o.from, chat, date: nowSec() };
    if (o.threadId !== undefined && chat.type !== "private") {
      msg.message_thread_id = o.threadId;
      if (chat.is_forum) {
        msg.is_topic_message = true;
        this.store.addTopic(chat.id, o.threadId);
      }
    }
    let reply: TgMessage | undefined;
    if (o.replyTo !== undefined) {
      const id = typeof o.replyTo === "number" ? o.replyTo : o.replyTo.message_id;
      reply = this.store.getMessage(chat.id, id) ?? (typeof o.replyTo === "number" ? undefined : o.replyTo);
      if (!reply) throw new Error(`FakeTelegram: message ${id} not found in chat ${chat.id}`);
    } else if (msg.is_topic_message && o.threadId !== undefined) {
      // Telegram sets reply_to_message to the topic's creation message for plain topic messages.
      reply = this.store.getMessage(chat.id, o.threadId);
    }
    if (reply) msg.reply_to_message = shallow(reply);
    if (o.forwardFrom !== undefined) msg.forward_origin = forwardOrigin(o.forwardFrom, msg.date - 60);
    Object.assign(msg, o.extra);
    return msg;
  }

  message(o: UserMessageOptions): TgUpdate {
    const msg = this.baseMessage(o);
    // No text given: a service message (new_chat_members, ... via `extra`) has no text field.
    if (o.text !== undefined) {
      msg.text = o.text;
      const entities = o.entities ?? detectEntities(o.text);
      if (entities.length) msg.entities = entities;
    }
    this.store.storeMessage(msg);
    return this.stamp({ message: msg });
  }

  /** A message that @-mentions the bot (adds the mention entity). */
  mention(o: UserMessageOptions): TgUpdate {
    const handle = `@${this.store.bot.username ?? "bot"}`;
    const text = o.text === undefined ? handle : o.text.includes(handle) ? o.text : `${handle} ${o.text}`;
    return this.message({ ...o, text });
  }

  /** `/name args` (or `/name@botname args` with `addressed: true`), with its bot_command entity. */
  command(o: Omit<UserMessageOptions, "text"> & { command: string; args?: string; addressed?: boolean }): TgUpdate {
    const name = o.command.replace(/^\//, "");
    const cmd = `/${name}${o.addressed ? `@${this.store.bot.username ?? "bot"}` : ""}`;
    return this.message({ ...o, text: o.args ? `${cmd} ${o.args}` : cmd });
  }

  /** edited_message for a message the user sent earlier. */
  edit(message: TgMessage, text: string): TgUpdate {
    const stored = this.store.getMessage(message.chat.id, message.message_id) ?? message;
    const edited: TgMessage = { ...stored, text, edit_date: nowSec() };
    const entities = detectEntities(text);
    if (entities.length) edited.entities = entities;
    else delete edited.entities;
    this.store.storeMessage(edited);
    return this.stamp({ edited_message: edited });
  }

  private media(o: MediaOptions, fill: (msg: TgMessage, data: Buffer) => void, defaultData: string): TgUpdate {
    const msg = this.baseMessage(o);
    fill(msg, o.data ?? Buffer.from(defaultData));
    if (o.caption !== undefined) {
      msg.caption = o.caption;
      const ents = detectEntities(o.caption);
      if (ents.length) msg.caption_entities = ents;
    }
    this.store.storeMessage(msg);
    return this.stamp({ message: msg });
  }

  photo(o: MediaOptions & { width?: number; height?: number }): TgUpdate {
    return this.media(
      o,
      (msg, data) => {
        const w = o.width ?? 1280;
        const h = o.height ?? 960;
        const thumb = this.store.registerFile(data.subarray(0, Math.min(data.length, 64)), "jpg");
        const full = this.store.registerFile(data, "jpg");
        const sizes: TgPhotoSize[] = [
          { file_id: thumb.file_id, file_unique_id: thumb.file_unique_id, width: 90, height: Math.round((90 * h) / w), file_size: thumb.data.length },
          { file_id: full.file_id, file_unique_id: full.file_unique_id, width: w, height: h, file_size: data.length },
        ];
        msg.photo = sizes;
      },
      "\xff\xd8fake-jpeg",
    );
  }

  document(o: MediaOptions & { fileName?: string; mimeType?: string }): TgUpdate {
    return this.media(
      o,
      (msg, data) => {
        const f = this.store.registerFile(data, "bin");
        msg.document = {
          file_id: f.file_id,
          file_unique_id: f.file_unique_id,
          file_name: o.fileName ?? "document.txt",
          mime_type: o.mimeType ?? "text/plain",
          file_size: data.length,
        };
      },
      "fake document",
    );
  }

  voice(o: MediaOptions & { duration?: number }): TgUpdate {
    return this.media(
      o,
      (msg, data) => {
        const f = this.store.registerFile(data, "oga");
        msg.voice = { file_id: f.file_id, file_unique_id: f.file_unique_id, duration: o.duration ?? 3, mime_type: "audio/ogg", file_size: data.length };
      },
      "OggS fake voice",
    );
  }

  /** A press on an inline keyboard button of `message` (usually one the bot sent). */
  callbackQuery(o: { from: TgUser; message: TgMessage; data: string }): TgUpdate {
    const id = randomUUID().replace(/-/g, "").slice(0, 19);
    this.store.callbackQueries.set(id, { answered: false });
    const message = this.store.getMessage(o.message.chat.id, o.message.message_id) ?? o.message;
    return this.stamp({
      callback_query: { id, from: o.from, message, chat_instance: String(Math.abs(message.chat.id) * 7), data: o.data },
    });
  }
}

/** In-memory world of the Telegram fake: chats, messages, topics, files, commands. */
import type { TgChat, TgMessage, TgUser } from "./types.js";

export interface StoredFile {
  file_id: string;
  file_unique_id: string;
  file_path: string;
  data: Buffer;
}

export class TgStore {
  readonly chats = new Map<number, TgChat>();
  /** key `${chatId}:${messageId}` */
  readonly messages = new Map<string, TgMessage>();
  /** chatId -> known forum topic ids (message_thread_id) */
  readonly topics = new Map<number, Set<number>>();
  /** Basic groups upgraded to a supergroup: old chat id -> the supergroup's id. */
  readonly migrations = new Map<number, number>();
  readonly files = new Map<string, StoredFile>();
  /** key: scope JSON + language code */
  readonly commands = new Map<string, { command: string; description: string }[]>();
  readonly callbackQueries = new Map<string, { answered: boolean; answer?: Record<string, unknown> }>();
  /** Groups, supergroups and channels the bot left (leaveChat). */
  readonly left = new Set<number>();
  private messageIds = new Map<number, number>();
  private fileSeq = 0;
  private userSeq = 0;

  constructor(readonly bot: TgUser) {}

  reset(): void {
    this.chats.clear();
    this.messages.clear();
    this.topics.clear();
    this.migrations.clear();
    this.files.clear();
    this.commands.clear();
    this.callbackQueries.clear();
    this.left.clear();
    this.messageIds.clear();
  }

  addChat(chat: TgChat): TgChat {
    const existing = this.chats.get(chat.id);
    const merged = { ...existing, ...chat };
    this.chats.set(chat.id, merged);
    return merged;
  }

  /** Resolves a chat_id parameter (number, numeric string or @username). */
  findChat(chatId: unknown): TgChat | undefined {
    if (typeof chatId === "string" && chatId.startsWith("@")) {
      const name = chatId.slice(1).toLowerCase();
      return [...this.chats.values()].find((c) => c.username?.toLowerCase() === name);
    }
    const id = Number(chatId);
    return Number.isFinite(id) ? this.chats.get(id) : undefined;
  }

  nextMessageId(chatId: number): number {
    const n = (this.messageIds.get(chatId) ?? 0) + 1;
    this.messageIds.set(chatId, n);
    return n;
  }

  storeMessage(m: TgMessage): TgMessage {
    this.messages.set(`${m.chat.id}:${m.message_id}`, m);
    return m;
  }

  getMessage(chatId: number, messageId: number): TgMessage | undefined {
    return this.messages.get(`${chatId}:${messageId}`);
  }

  addTopic(chatId: number, threadId: number): void {
    let s = this.topics.get(chatId);
    if (!s) this.topics.set(chatId, (s = new Set()));
    s.add(threadId);
  }

  registerFile(data: Buffer, ext: string): StoredFile {
    const n = ++this.fileSeq;
    const f: StoredFile = {
      file_id: `FAKEFILE${n.toString().padStart(6, "0")}_${ext}`,
      file_unique_id: `U${n.toString(36)}`,
      file_path: `${ext}s/file_${n}.${ext}`,
      data,
    };
    this.files.set(f.file_id, f);
    return f;
  }

  newUserId(): number {
    return 100_000 + ++this.userSeq;
  }
}

/** Strips reply_to_message from a message (Telegram never nests it twice). */
export function shallow(m: TgMessage): TgMessage {
  const { reply_to_message: _drop, ...rest } = m;
  return rest as TgMessage;
}

import type { Severity } from "../types.js";
import type { ConsoleCard } from "./approval-card.js";
import * as ids from "./ids.js";

export interface HistoryEntry {
  messageId: string;
  from: "bot" | "user";
  text: string;
  senderId?: string;
  senderName?: string;
  at: string;
  card?: ConsoleCard;
  /** A notice's severity (warn, error, success), which the page styles. */
  severity?: Severity;
}

type Where = { chatId: string; threadId?: string };

/**
 * The messages kept per conversation for a page opened later: at most
 * `limit` each, and at most `maxConversations`, the least recently used
 * dropped first.
 */
export class ConversationHistory {
  readonly #history = new Map<string, HistoryEntry[]>();

  constructor(
    private readonly limit: number,
    private readonly maxConversations: number,
  ) {}

  /** A conversation's messages, oldest first (a copy). */
  list(chatId: string, threadId?: string): HistoryEntry[] {
    return [...(this.#history.get(ids.conversationKey(chatId, threadId)) ?? [])];
  }

  find(t: Where, messageId: string): HistoryEntry | undefined {
    return this.#history.get(ids.conversationKey(t.chatId, t.threadId))?.find((m) => m.messageId === messageId);
  }

  remember(t: Where, entry: HistoryEntry): void {
    const key = ids.conversationKey(t.chatId, t.threadId);
    const list = this.#history.get(key) ?? [];
    // Re-inserted so Map order is least recently used first.
    this.#history.delete(key);
    this.#history.set(key, list);
    list.push(entry);
    if (list.length > this.limit) list.splice(0, list.length - this.limit);
    while (this.#history.size > this.maxConversations) {
      const oldest = this.#history.keys().next().value;
      if (oldest === undefined) break;
      this.#history.delete(oldest);
    }
  }

  forget(t: Where, entry: HistoryEntry): void {
    const list = this.#history.get(ids.conversationKey(t.chatId, t.threadId));
    const i = list?.indexOf(entry) ?? -1;
    if (i >= 0) list!.splice(i, 1);
  }
}

import type { RateLimit } from "./bot-pace.js";
import { TokenBucket } from "./token-bucket.js";

/** One chat's pacing state in the scheduler. */
export interface ChatPace {
  /** Work queued or in flight. */
  queued: number;
  bucket: TokenBucket;
  /** Until when a 429 of this chat pauses it. */
  pausedUntil: number;
}

/**
 * The pacing state of every chat that has work or still a debt: a chat
 * that is idle with a full bucket and no pause is forgotten (a fresh entry
 * would be identical), so the map stays as small as the busy chats.
 */
export class ChatPaces {
  readonly #chats = new Map<string, ChatPace>();
  #sweepAt = 1024;

  constructor(
    private readonly limit: RateLimit,
    private readonly now: () => number,
    private readonly sleep: (ms: number) => Promise<void>,
  ) {
    // Fail at construction, not on the first message, if the per-chat limits are bad.
    new TokenBucket(limit.ratePerSec, limit.burst, now);
  }

  of(chatKey: string): ChatPace {
    let chat = this.#chats.get(chatKey);
    if (!chat) {
      if (this.#chats.size >= this.#sweepAt) this.#sweep();
      chat = { queued: 0, bucket: new TokenBucket(this.limit.ratePerSec, this.limit.burst, this.now), pausedUntil: 0 };
      this.#chats.set(chatKey, chat);
    }
    return chat;
  }

  queued(chatKey: string): number {
    return this.#chats.get(chatKey)?.queued ?? 0;
  }

  /** The chat's work is done for now: forgotten if nothing is left to remember. */
  settled(chatKey: string, chat: ChatPace): void {
    if (this.#forgettable(chat) && this.#chats.get(chatKey) === chat) this.#chats.delete(chatKey);
  }

  /** Until the chat's pause is over and its bucket has a token. */
  async ready(chat: ChatPace): Promise<void> {
    for (;;) {
      const wait = Math.max(chat.pausedUntil - this.now(), chat.bucket.waitMs());
      if (wait <= 0) return;
      await this.sleep(wait);
    }
  }

  #sweep(): void {
    for (const [key, chat] of this.#chats) if (this.#forgettable(chat)) this.#chats.delete(key);
    this.#sweepAt = Math.max(1024, this.#chats.size * 2);
  }

  #forgettable(chat: ChatPace): boolean {
    return chat.queued === 0 && chat.pausedUntil <= this.now() && chat.bucket.isFull();
  }
}

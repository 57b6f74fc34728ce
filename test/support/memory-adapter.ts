import { randomUUID } from "node:crypto";
import {
  AdapterError,
  type Adapter,
  type AdapterContext,
  type AdapterLimits,
  type AdapterSink,
  type PlatformFacts,
  type InboundEnvelope,
  type ReplyAddress,
  type SendOptions,
} from "../../adapters/types.js";

export interface Sent {
  chatId: string;
  threadId?: string;
  replyToMessageId?: string;
  text: string;
  messageId: string;
  idempotencyKey?: string;
  at: number;
}

/**
 * An in-process platform for gateway tests: a sink that records what the
 * bot sent, with 429 and failure injection, and helpers that build
 * envelopes. It stands in for a platform, not for any of our own code.
 */
export class MemoryAdapter implements Adapter {
  readonly platform = "telegram" as const;
  botUsername = "membot";
  ctx!: AdapterContext;
  readonly sent: Sent[] = [];
  readonly edits: Array<{ messageId: string; text: string }> = [];
  readonly typingCalls: string[] = [];
  rateLimitNext = 0;
  retryAfterMs = 200;
  failTyping = false;
  #ids = 0;
  #seq = 0;
  ready = true;
  /** A Telegram bot's: it can DM a person by user id (a test may say otherwise). */
  facts: PlatformFacts = { dmByUserId: true };

  constructor(
    readonly botId = "777",
    readonly limits: AdapterLimits = {
      maxTextLength: 4096,
      editIntervalMs: { private: 100, group: 100 },
      perChat: { ratePerSec: 1000, burst: 1000 },
      global: { ratePerSec: 1000, burst: 1000 },
      canEdit: true,
    },
  ) {}

  sink: AdapterSink = {
    send: async (to: ReplyAddress, text: string, opts?: SendOptions) => {
      if (this.rateLimitNext > 0) {
        this.rateLimitNext--;
        throw new AdapterError("telegram", "RateLimited", "Too Many Requests", this.retryAfterMs);
      }
      const messageId = String(++this.#ids);
      this.sent.push({
        chatId: to.chatId,
        threadId: to.threadId,
        replyToMessageId: to.replyToMessageId,
        text,
        messageId,
        idempotencyKey: opts?.idempotencyKey,
        at: Date.now(),
      });
      return { messageId };
    },
    edit: async (_to, messageId, text) => {
      this.edits.push({ messageId, text });
    },
    typing: async (to) => {
      this.typingCalls.push(to.chatId);
      if (this.failTyping) throw new AdapterError("telegram", "Transient", "sendChatAction answered 500");
    },
  };

  async start(ctx: AdapterContext): Promise<void> {
    this.ctx = ctx;
  }
  async stop(): Promise<void> {}
  health() {
    return { ready: this.ready, detail: this.ready ? undefined : "connection lost" };
  }

  /** A user's message as the platform would deliver it. */
  dm(userId: string, text: string, extra: Partial<InboundEnvelope> = {}): InboundEnvelope {
    const id = String(++this.#seq);
    return {
      platform: "telegram",
      botId: this.botId,
      chatKind: "private",
      chatId: userId,
      senderId: userId,
      senderName: `user ${userId}`,
      text,
      mentioned: false,
      eventId: `${userId}:${id}:${randomUUID()}`,
      messageId: id,
      occurredAt: new Date(),
      replyTo: { platform: "telegram", botId: this.botId, chatId: userId, replyToMessageId: id },
      channel: `telegram:${this.botId}:dm:${userId}`,
      ...extra,
    };
  }

  group(chatId: string, senderId: string, text: string, extra: Partial<InboundEnvelope> = {}): InboundEnvelope {
    return this.dm(senderId, text, {
      chatKind: "group",
      chatId,
      replyTo: { platform: "telegram", botId: this.botId, chatId },
      channel: `telegram:${this.botId}:group:${chatId}`,
      ...extra,
    });
  }

  to(chatId: string): Sent[] {
    return this.sent.filter((s) => s.chatId === chatId);
  }
}

import type { Adapter, AdapterContext, AdapterLimits, AdapterSink, InboundEnvelope, ReplyAddress } from "../../adapters/types.js";

/**
 * An in-process platform for the core scenarios (adapted from
 * test/support/memory-adapter.ts): no SDK, a sink that completes at once
 * and reports each send to `onSend`, and limits so high that pacing never
 * bounds the gateway.
 */
export class BenchAdapter implements Adapter {
  readonly platform = "telegram" as const;
  readonly botUsername = "benchbot";
  ctx!: AdapterContext;
  sends = 0;
  onSend: (to: ReplyAddress, text: string) => void = () => {};
  #ids = 0;
  readonly limits: AdapterLimits = {
    maxTextLength: 4096,
    editIntervalMs: { private: 100, group: 100 },
    perChat: { ratePerSec: 1e6, burst: 1e6 },
    global: { ratePerSec: 1e6, burst: 1e6 },
    canEdit: true,
  };
  constructor(readonly botId = "777") {}

  sink: AdapterSink = {
    send: async (to, text) => {
      this.sends++;
      this.onSend(to, text);
      return { messageId: String(++this.#ids) };
    },
    edit: async () => {},
    typing: async () => {},
  };

  async start(ctx: AdapterContext): Promise<void> {
    this.ctx = ctx;
  }
  async stop(): Promise<void> {}
  health() {
    return { ready: true };
  }

  /** A message from `senderId` in chat `chatId` (a DM when they are equal). */
  envelope(chatId: string, senderId: string, group: boolean, text: string, eventId: string): InboundEnvelope {
    return {
      platform: "telegram",
      botId: this.botId,
      chatKind: group ? "group" : "private",
      chatId,
      senderId,
      senderName: `user ${senderId}`,
      text,
      mentioned: false,
      eventId,
      messageId: eventId,
      occurredAt: new Date(),
      replyTo: group ? { platform: "telegram", botId: this.botId, chatId } : { platform: "telegram", botId: this.botId, chatId, replyToMessageId: eventId },
      channel: group ? `telegram:${this.botId}:group:${chatId}` : `telegram:${this.botId}:dm:${chatId}`,
    };
  }
}

import type { Adapter, AdapterContext, AdapterSink, InboundEnvelope } from "../../adapters/types.js";
import { AdapterError } from "../../adapters/types.js";
import type { PlatformUpdate } from "./loopback-platform.js";

/**
 * The adapter for LoopbackPlatform: long-polls updates and confirms each only
 * after the gateway recorded it; sends with the delivery's idempotency key as
 * the platform nonce.
 */
export class LoopbackAdapter implements Adapter {
  readonly platform = "telegram" as const;
  readonly botId = "loop";
  readonly limits = {
    maxTextLength: 2000,
    editIntervalMs: { private: 200, group: 200 },
    perChat: { ratePerSec: 100, burst: 100 },
    global: { ratePerSec: 2000, burst: 2000 },
    canEdit: false,
  };
  readonly facts = { dmByUserId: true };
  #stopped = false;
  #loop: Promise<void> | undefined;
  #abort = new AbortController();

  constructor(
    readonly baseUrl: string,
    /** "poll": long-poll the platform (like Telegram's getUpdates); "webhook": the platform POSTs to /loopback/update. */
    readonly mode: "poll" | "webhook" = "poll",
  ) {}

  sink: AdapterSink = {
    send: async (to, text, opts) => {
      const r = await fetch(`${this.baseUrl}/send`, {
        method: "POST",
        body: JSON.stringify({ chatId: to.chatId, text, replyTo: to.replyToMessageId, nonce: opts?.idempotencyKey }),
      }).catch((e: unknown) => {
        throw new AdapterError("telegram", "Transient", `send failed: ${String(e)}`);
      });
      if (!r.ok) throw new AdapterError("telegram", "Transient", `send answered ${r.status}`);
      return (await r.json()) as { messageId: string };
    },
    edit: async () => {},
    typing: async () => {},
  };

  async start(ctx: AdapterContext): Promise<void> {
    if (this.mode === "poll") {
      this.#loop = this.#poll(ctx);
      return;
    }
    ctx.route("POST", "/loopback/update", async (req) => {
      const u = JSON.parse(req.rawBody.toString("utf8")) as PlatformUpdate;
      const r = await ctx.inbound(this.#envelope(u));
      return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(r) };
    });
  }

  #envelope(u: PlatformUpdate): InboundEnvelope {
    return {
      platform: "telegram",
      botId: this.botId,
      chatKind: "private",
      chatId: u.chatId,
      senderId: u.senderId,
      text: u.text,
      mentioned: false,
      eventId: `${u.chatId}:${u.messageId}`,
      messageId: u.messageId,
      occurredAt: new Date(u.date),
      replyTo: { platform: "telegram", botId: this.botId, chatId: u.chatId, replyToMessageId: u.messageId },
      channel: `telegram:${this.botId}:dm:${u.chatId}`,
    };
  }

  async #poll(ctx: AdapterContext): Promise<void> {
    let offset = 0;
    while (!this.#stopped) {
      let batch: PlatformUpdate[];
      try {
        batch = (await (await fetch(`${this.baseUrl}/updates?offset=${offset}&timeout=500`, { signal: this.#abort.signal })).json()) as PlatformUpdate[];
      } catch {
        if (this.#stopped) return;
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      for (const u of batch) {
        await ctx.inbound(this.#envelope(u));
        offset = u.id + 1; // confirmed only once recorded
      }
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    await this.#loop;
  }

  health() {
    return { ready: !this.#stopped };
  }
}

import http from "node:http";
import type { AddressInfo } from "node:net";

export interface PlatformUpdate {
  id: number;
  chatId: string;
  senderId: string;
  text: string;
  messageId: string;
  date: number;
}

export interface PlatformMessage {
  chatId: string;
  text: string;
  replyTo?: string;
  nonce?: string;
  at: number;
  messageId: string;
}

/**
 * A tiny chat platform on 127.0.0.1 for crash and multi-process tests:
 * long-polled updates confirmed by offset (as Telegram's getUpdates), and a
 * send endpoint that deduplicates on a client nonce within its lifetime (as
 * Discord's enforce_nonce does). It lives in the test process, so it
 * survives the gateway being killed.
 */
export class LoopbackPlatform {
  readonly updates: PlatformUpdate[] = [];
  readonly messages: PlatformMessage[] = [];
  readonly #nonces = new Map<string, string>();
  /** Sends answered from the nonce cache: resends after a crash that the platform absorbed. */
  dedupedResends = 0;
  #confirmed = 0;
  #nextId = 1;
  #waiters: Array<() => void> = [];
  #server = http.createServer((req, res) => void this.#handle(req, res));

  async start(): Promise<string> {
    await new Promise<void>((r) => this.#server.listen(0, "127.0.0.1", r));
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  inject(chatId: string, senderId: string, text: string): PlatformUpdate {
    const u = { id: this.#nextId++, chatId, senderId, text, messageId: `m${this.#nextId}`, date: Date.now() };
    this.updates.push(u);
    for (const w of this.#waiters.splice(0)) w();
    return u;
  }

  get confirmed(): number {
    return this.#confirmed;
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    const body = await new Promise<string>((r) => {
      let b = "";
      req.on("data", (c) => (b += c));
      req.on("end", () => r(b));
    });
    const reply = (status: number, data: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(data));
    };
    if (url.pathname === "/updates") {
      const offset = Number(url.searchParams.get("offset") ?? 0);
      this.#confirmed = Math.max(this.#confirmed, offset - 1);
      const pending = () => this.updates.filter((u) => u.id >= offset).slice(0, 100);
      if (pending().length === 0) {
        await new Promise<void>((r) => {
          const t = setTimeout(r, Number(url.searchParams.get("timeout") ?? 1000));
          t.unref();
          this.#waiters.push(() => {
            clearTimeout(t);
            r();
          });
        });
      }
      return reply(200, pending());
    }
    if (url.pathname === "/send") {
      const m = JSON.parse(body) as Omit<PlatformMessage, "at" | "messageId">;
      if (m.nonce && this.#nonces.has(m.nonce)) {
        this.dedupedResends++;
        return reply(200, { messageId: this.#nonces.get(m.nonce) });
      }
      const messageId = `b${this.messages.length + 1}`;
      this.messages.push({ ...m, at: Date.now(), messageId });
      if (m.nonce) this.#nonces.set(m.nonce, messageId);
      return reply(200, { messageId });
    }
    if (url.pathname === "/typing" || url.pathname === "/edit") return reply(200, {});
    reply(404, { error: "unknown" });
  }

  async close(): Promise<void> {
    for (const w of this.#waiters.splice(0)) w();
    this.#server.closeAllConnections();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }
}

import type { HttpResponse } from "../types.js";
import type { ConsoleCard } from "./approval-card.js";

/** What the page receives on /api/console/events: one per sink call. */
export interface ConsoleEvent {
  type: "message" | "edit" | "typing";
  /** An approval card: the page draws its buttons (approval-card.ts). */
  card?: ConsoleCard;
  chatId: string;
  threadId?: string;
  /** Empty for typing. */
  messageId: string;
  /** Empty for typing. */
  text: string;
  at: string;
}

interface SseClient {
  write: (chunk: string) => boolean;
  timer: NodeJS.Timeout;
}

/** The open pages' event streams (server-sent events, with keep-alive comments so proxies keep an idle one open). */
export class PageEvents {
  readonly #clients = new Set<SseClient>();

  constructor(private readonly keepAliveMs: number) {}

  /** The response of GET /api/console/events: a stream this page gets every event on until it closes. */
  stream(): HttpResponse {
    return {
      status: 200,
      headers: { "content-type": "text/event-stream; charset=utf-8", "x-accel-buffering": "no" },
      stream: (write, onClose) => {
        const timer = setInterval(() => write(": keep-alive\n\n"), this.keepAliveMs);
        // A page left open must not keep the process alive at shutdown.
        timer.unref();
        const client: SseClient = { write, timer };
        this.#clients.add(client);
        write("retry: 2000\n: connected\n\n");
        onClose(() => {
          clearInterval(timer);
          this.#clients.delete(client);
        });
      },
    };
  }

  broadcast(e: ConsoleEvent): void {
    const frame = `data: ${JSON.stringify(e)}\n\n`;
    for (const c of this.#clients) c.write(frame);
  }

  /** Ends every page's keep-alive and forgets the pages. */
  closeAll(): void {
    for (const c of this.#clients) clearInterval(c.timer);
    this.#clients.clear();
  }

  get size(): number {
    return this.#clients.size;
  }
}

/**
 * The web console: a local channel for operators. A person at the page plays
 * simulated users in private chats and groups; their messages enter the
 * gateway like any platform's (recorded, deduplicated, bound to a session),
 * and replies come back to the page over server-sent events.
 *
 * It is `trusted`, so DM pairing does not apply; group messages still follow
 * GROUP_REQUIRE_MENTION, which is what makes it useful for trying group
 * behaviour. It has no authentication of its own: it must only be reachable
 * by operators (the gateway listens on 127.0.0.1 by default).
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { Logger } from "../../src/log.js";
import {
  AdapterError,
  AdapterSetupError,
  type Adapter,
  type AdapterContext,
  type AdapterHealth,
  type AdapterLimits,
  type AdapterSink,
  type HttpRequest,
  type HttpResponse,
  type InboundEnvelope,
  type InboundResult,
  type ReplyAddress,
} from "../types.js";
import * as ids from "./ids.js";
import { consoleCard, consoleClick, type ConsoleCard } from "./approval-card.js";
import { ASSETS, SECURITY_HEADERS, assetBody } from "./page.js";

export interface ConsoleAdapterOptions {
  /** The agent id the console talks to. Default "console". */
  botId?: string;
  /** Messages kept per conversation for a page opened later. Default 200. */
  historyLimit?: number;
  /** Conversations kept in memory; the least recently used is dropped first. Default 1000. */
  maxConversations?: number;
  /** Interval of SSE keep-alive comments, so proxies and browsers keep an idle stream open. Default 15 s. */
  keepAliveMs?: number;
  log?: Logger;
}

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

export interface HistoryEntry {
  messageId: string;
  from: "bot" | "user";
  text: string;
  senderId?: string;
  senderName?: string;
  at: string;
  card?: ConsoleCard;
}

interface SseClient {
  write: (chunk: string) => boolean;
  timer: NodeJS.Timeout;
}

const consoleId = z.string().regex(ids.ID_PATTERN, `must be ${ids.ID_RULE}`);

const MessageBody = z.object({
  chat: z.discriminatedUnion("type", [
    z.object({ type: z.literal("private"), id: consoleId.optional(), title: z.string().max(200).optional() }),
    z.object({ type: z.literal("group"), id: consoleId, title: z.string().max(200).optional(), threadId: consoleId.optional() }),
  ]),
  sender: z.object({ id: consoleId, name: z.string().trim().min(1, "must not be empty").max(100) }),
  text: z.string().refine((t) => t.trim().length > 0, "must not be empty"),
  mention: z.boolean().optional(),
  clientId: z.string().regex(ids.EVENT_ID_PATTERN, "must be 1-128 characters of A-Z, a-z, 0-9, '_', '.', ':' and '-' (a UUID fits)").optional(),
});
export type ConsoleMessage = z.infer<typeof MessageBody>;

const AddressQuery = z.discriminatedUnion("type", [
  z.object({ type: z.literal("private"), id: consoleId }),
  z.object({ type: z.literal("group"), id: consoleId, threadId: consoleId.optional() }),
]);

const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  body: JSON.stringify(body),
});

const explain = (e: z.ZodError): string => e.issues.map((i) => `${i.path.length ? i.path.join(".") : "body"}: ${i.message}`).join("; ");

type State = "idle" | "running" | "stopped";

export class ConsoleAdapter implements Adapter {
  readonly platform = ids.PLATFORM;
  readonly botId: string;
  readonly botUsername = ids.BOT_USERNAME;
  readonly trusted = true;
  /**
   * Nothing to protect on the other end: limits only need to keep a runaway
   * agent from flooding the page. Edits at 250 ms make streaming visible.
   */
  readonly limits: AdapterLimits = {
    maxTextLength: 4000,
    editIntervalMs: { private: 250, group: 250 },
    perChat: { ratePerSec: 50, burst: 100 },
    global: { ratePerSec: 500, burst: 1000 },
    canEdit: true,
  };
  readonly sink: AdapterSink;

  readonly #historyLimit: number;
  readonly #maxConversations: number;
  readonly #keepAliveMs: number;
  readonly #history = new Map<string, HistoryEntry[]>();
  readonly #clients = new Set<SseClient>();
  /** Keyed by the gateway's route function: a route can be mounted only once per server, even across restarts. */
  readonly #mounted = new WeakSet<object>();
  #ctx: AdapterContext | undefined;
  #log: Logger | undefined;
  #state: State = "idle";

  constructor(private readonly opts: ConsoleAdapterOptions = {}) {
    this.botId = opts.botId ?? ids.DEFAULT_BOT_ID;
    if (!ids.isConsoleId(this.botId))
      throw new AdapterSetupError("Config", `ConsoleAdapter botId ${JSON.stringify(this.botId)} is not valid: use ${ids.ID_RULE}`);
    this.#historyLimit = opts.historyLimit ?? 200;
    this.#maxConversations = opts.maxConversations ?? 1000;
    this.#keepAliveMs = opts.keepAliveMs ?? 15_000;
    this.sink = {
      send: async (to, text) => {
        const t = this.#target(to);
        const messageId = randomUUID();
        const at = new Date().toISOString();
        this.#remember(t, { messageId, from: "bot", text, at });
        this.#broadcast({ type: "message", chatId: t.chatId, ...(t.threadId !== undefined && { threadId: t.threadId }), messageId, text, at });
        return { messageId };
      },
      edit: async (to, messageId, text) => {
        const t = this.#target(to);
        const entry = this.#history.get(ids.conversationKey(t.chatId, t.threadId))?.find((m) => m.messageId === messageId);
        if (entry) entry.text = text;
        this.#broadcast({
          type: "edit",
          chatId: t.chatId,
          ...(t.threadId !== undefined && { threadId: t.threadId }),
          messageId,
          text,
          at: new Date().toISOString(),
        });
      },
      sendCard: async (to, card) => {
        const t = this.#target(to);
        const messageId = randomUUID();
        const at = new Date().toISOString();
        const c = consoleCard(card);
        this.#remember(t, { messageId, from: "bot", text: c.text, at, card: c.card });
        this.#broadcast({
          type: "message",
          chatId: t.chatId,
          ...(t.threadId !== undefined && { threadId: t.threadId }),
          messageId,
          text: c.text,
          card: c.card,
          at,
        });
        return { messageId };
      },
      editCard: async (to, messageId, card) => {
        const t = this.#target(to);
        const c = consoleCard(card);
        const entry = this.#history.get(ids.conversationKey(t.chatId, t.threadId))?.find((m) => m.messageId === messageId);
        if (entry) Object.assign(entry, { text: c.text, card: c.card });
        this.#broadcast({
          type: "edit",
          chatId: t.chatId,
          ...(t.threadId !== undefined && { threadId: t.threadId }),
          messageId,
          text: c.text,
          card: c.card,
          at: new Date().toISOString(),
        });
      },
      typing: async (to) => {
        const t = this.#target(to);
        this.#broadcast({
          type: "typing",
          chatId: t.chatId,
          ...(t.threadId !== undefined && { threadId: t.threadId }),
          messageId: "",
          text: "",
          at: new Date().toISOString(),
        });
      },
    };
  }

  async start(ctx: AdapterContext): Promise<void> {
    if (this.#state === "running") throw new AdapterSetupError("AlreadyStarted", "ConsoleAdapter.start() called while already running: stop() it first");
    this.#ctx = ctx;
    this.#log = (this.opts.log ?? ctx.log).child({ platform: ids.PLATFORM, botId: this.botId });
    if (!this.#mounted.has(ctx.route)) {
      this.#mount(ctx);
      this.#mounted.add(ctx.route);
    }
    this.#state = "running";
    this.#log.info("console adapter started: open the gateway's base URL in a browser");
  }

  /** Stops taking messages. The sink keeps working so in-flight replies still land in the history. */
  async stop(): Promise<void> {
    this.#state = "stopped";
    for (const c of this.#clients) clearInterval(c.timer);
    this.#clients.clear();
  }

  health(): AdapterHealth {
    return this.#state === "running"
      ? { ready: true, detail: `${this.#clients.size} page(s) connected` }
      : { ready: false, detail: this.#state === "idle" ? "not started" : "stopped" };
  }

  /** Replies kept for a conversation (oldest first), as GET /api/console/history returns them. */
  history(chatId: string, threadId?: string): HistoryEntry[] {
    return [...(this.#history.get(ids.conversationKey(chatId, threadId)) ?? [])];
  }

  #mount(ctx: AdapterContext): void {
    for (const a of ASSETS) {
      ctx.route("GET", a.path, async () => ({ status: 200, headers: { ...SECURITY_HEADERS, "content-type": a.contentType }, body: assetBody(a) }));
    }
    ctx.route("POST", "/api/console/messages", (req) => this.#postMessage(req));
    ctx.route("GET", "/api/console/events", async () => this.#events());
    ctx.route(
      "POST",
      "/api/console/approvals",
      async (req) =>
        refuseCrossSite(req) ?? (this.#state === "running" ? consoleClick(req, this.#ctx) : json(503, { error: "the console adapter is not running" })),
      { maxBodyBytes: 4096 },
    );
    ctx.route("GET", "/api/console/history", async (req) => this.#getHistory(req));
    ctx.route("GET", "/api/console/address", async (req) => this.#getAddress(req));
  }

  async #postMessage(req: HttpRequest): Promise<HttpResponse> {
    if (this.#state !== "running" || !this.#ctx) return json(503, { error: "the console adapter is not running; start the gateway" });
    const refused = refuseCrossSite(req);
    if (refused) return refused;
    let raw: unknown;
    try {
      raw = JSON.parse(req.rawBody.toString("utf8"));
    } catch (e) {
      return json(400, {
        error: `the body is not valid JSON (${(e as Error).message}); send {"chat":{"type":"private"},"sender":{"id":"alice","name":"Alice"},"text":"hi"}`,
      });
    }
    const parsed = MessageBody.safeParse(raw);
    if (!parsed.success) return json(400, { error: `invalid message: ${explain(parsed.error)}` });
    const m = parsed.data;
    if (m.chat.type === "private" && m.chat.id !== undefined && m.chat.id !== m.sender.id) {
      return json(400, {
        error: `invalid message: chat.id: a private chat is with its sender, so chat.id must equal sender.id ("${m.sender.id}") or be left out`,
      });
    }
    const env = this.#envelope(m);
    const where = { chatId: env.chatId, ...(env.threadId !== undefined && { threadId: env.threadId }) };
    // Kept before handing it on, so the history never shows a reply ahead of its question.
    const entry: HistoryEntry = {
      messageId: env.eventId,
      from: "user",
      text: env.text,
      senderId: env.senderId,
      senderName: m.sender.name,
      at: env.occurredAt.toISOString(),
    };
    this.#remember(where, entry);
    let result: InboundResult;
    try {
      result = await this.#ctx.inbound(env);
    } catch (e) {
      this.#forget(where, entry);
      throw e;
    }
    if (result.status !== "accepted") this.#forget(where, entry);
    this.#log?.debug({ chatId: env.chatId, status: result.status }, "console message");
    return json(result.status === "accepted" ? 202 : 200, {
      ...result,
      chatId: env.chatId,
      ...(env.threadId !== undefined && { threadId: env.threadId }),
      channel: env.channel,
      eventId: env.eventId,
    });
  }

  #envelope(m: ConsoleMessage): InboundEnvelope {
    const chat: ids.ConsoleChat = m.chat.type === "private" ? { kind: "private", userId: m.sender.id } : { kind: "group", groupId: m.chat.id };
    const threadId = m.chat.type === "group" ? m.chat.threadId : undefined;
    const chatId = chat.kind === "private" ? ids.dmChatId(chat.userId) : ids.groupChatId(chat.groupId);
    const eventId = m.clientId ?? randomUUID();
    const env: InboundEnvelope = {
      platform: ids.PLATFORM,
      botId: this.botId,
      chatKind: chat.kind === "private" ? "private" : threadId !== undefined ? "thread" : "group",
      chatId,
      senderId: m.sender.id,
      senderName: m.sender.name,
      text: m.text,
      // A private message is always to the bot; in a group, the checkbox or an @mention in the text.
      mentioned: chat.kind === "private" || m.mention === true || ids.mentionsBot(m.text, this.botUsername),
      eventId,
      messageId: eventId,
      occurredAt: new Date(),
      replyTo: ids.encodeReplyAddress(this.botId, chatId, threadId),
      channel: ids.channelOfChat(this.botId, chat, threadId),
    };
    if (threadId !== undefined) env.threadId = threadId;
    const title = m.chat.title?.trim();
    if (title) env.chatTitle = title;
    return env;
  }

  #events(): HttpResponse {
    return {
      status: 200,
      headers: { "content-type": "text/event-stream; charset=utf-8", "x-accel-buffering": "no" },
      stream: (write, onClose) => {
        const timer = setInterval(() => write(": keep-alive\n\n"), this.#keepAliveMs);
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

  #getHistory(req: HttpRequest): HttpResponse {
    const chatId = req.query.get("chatId") ?? "";
    const threadId = req.query.get("threadId") || undefined;
    const chat = ids.parseChatId(chatId);
    if (!chat) return json(400, { error: `chatId "${chatId}" is not a console chat id: ask GET /api/console/address for it` });
    if (threadId !== undefined && (chat.kind !== "group" || !ids.isConsoleId(threadId)))
      return json(400, { error: `threadId must name a thread of a group (${ids.ID_RULE})` });
    return json(200, { chatId, ...(threadId !== undefined && { threadId }), messages: this.history(chatId, threadId) });
  }

  /** The page never builds identifiers itself: it asks here, so ids.ts stays the one place they are defined. */
  #getAddress(req: HttpRequest): HttpResponse {
    const q = AddressQuery.safeParse(Object.fromEntries([...req.query].filter(([, v]) => v !== "")));
    if (!q.success) return json(400, { error: `invalid address: ${explain(q.error)}` });
    const chat: ids.ConsoleChat = q.data.type === "private" ? { kind: "private", userId: q.data.id } : { kind: "group", groupId: q.data.id };
    const threadId = q.data.type === "group" ? q.data.threadId : undefined;
    return json(200, {
      chatId: chat.kind === "private" ? ids.dmChatId(chat.userId) : ids.groupChatId(chat.groupId),
      ...(threadId !== undefined && { threadId }),
      channel: ids.channelOfChat(this.botId, chat, threadId),
      botId: this.botId,
      botUsername: this.botUsername,
    });
  }

  #target(to: ReplyAddress): ids.ConsoleTarget {
    const t = ids.decodeReplyAddress(to, this.botId);
    if ("error" in t) throw new AdapterError("console", "Rejected", t.error);
    return t;
  }

  #remember(t: { chatId: string; threadId?: string }, entry: HistoryEntry): void {
    const key = ids.conversationKey(t.chatId, t.threadId);
    const list = this.#history.get(key) ?? [];
    // Re-inserted so Map order is least recently used first.
    this.#history.delete(key);
    this.#history.set(key, list);
    list.push(entry);
    if (list.length > this.#historyLimit) list.splice(0, list.length - this.#historyLimit);
    while (this.#history.size > this.#maxConversations) {
      const oldest = this.#history.keys().next().value;
      if (oldest === undefined) break;
      this.#history.delete(oldest);
    }
  }

  #forget(t: { chatId: string; threadId?: string }, entry: HistoryEntry): void {
    const list = this.#history.get(ids.conversationKey(t.chatId, t.threadId));
    const i = list?.indexOf(entry) ?? -1;
    if (i >= 0) list!.splice(i, 1);
  }

  #broadcast(e: ConsoleEvent): void {
    const frame = `data: ${JSON.stringify(e)}\n\n`;
    for (const c of this.#clients) c.write(frame);
  }
}

/**
 * The console acts as a trusted operator, so another site open in the same
 * browser must not be able to post to it. Requiring a JSON content type makes
 * a cross-site request need a CORS preflight, which this server never grants;
 * a browser's Origin header, when sent, must also match the Host.
 */
function refuseCrossSite(req: HttpRequest): HttpResponse | undefined {
  const type = String(req.headers["content-type"] ?? "");
  if (!/^application\/json\b/i.test(type)) return json(415, { error: "send the message as JSON, with the header content-type: application/json" });
  const origin = req.headers.origin;
  const host = req.headers.host;
  if (typeof origin === "string" && origin !== "null" && typeof host === "string") {
    let originHost: string | undefined;
    try {
      originHost = new URL(origin).host;
    } catch {
      originHost = undefined;
    }
    if (originHost !== host)
      return json(403, { error: "cross-origin requests to the console are refused: open the console page from this gateway's own address" });
  }
  if (origin === "null") return json(403, { error: "requests from an opaque origin are refused: open the console page from this gateway's own address" });
  return undefined;
}

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
import type { Logger } from "../../src/log.js";
import {
  AdapterError,
  AdapterSetupError,
  type Adapter,
  type AdapterContext,
  type AdapterHealth,
  type AdapterSink,
  type HttpRequest,
  type HttpResponse,
  type InboundEnvelope,
  type InboundResult,
  type ReplyAddress,
} from "../types.js";
import * as ids from "./ids.js";
import { consoleCard, consoleClick } from "./approval-card.js";
import { ASSETS, SECURITY_HEADERS, assetBody } from "./page.js";
import { ConversationHistory, type HistoryEntry } from "./history.js";
import { CONSOLE_LIMITS } from "./limits.js";
import { PageEvents } from "./page-events.js";
import { AddressQuery, MessageBody, explain, json, refuseCrossSite, type ConsoleMessage } from "./requests.js";

export type { ConsoleMessage } from "./requests.js";
export type { HistoryEntry } from "./history.js";
export type { ConsoleEvent } from "./page-events.js";

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

type State = "idle" | "running" | "stopped";

export class ConsoleAdapter implements Adapter {
  readonly platform = ids.PLATFORM;
  readonly botId: string;
  readonly botUsername = ids.BOT_USERNAME;
  readonly trusted = true;
  readonly limits = CONSOLE_LIMITS;
  readonly facts = { dmByUserId: true };
  readonly sink: AdapterSink;

  readonly #history: ConversationHistory;
  readonly #pages: PageEvents;
  /** Keyed by the gateway's route function: a route can be mounted only once per server, even across restarts. */
  readonly #mounted = new WeakSet<object>();
  #ctx: AdapterContext | undefined;
  #log: Logger | undefined;
  #state: State = "idle";

  constructor(private readonly opts: ConsoleAdapterOptions = {}) {
    this.botId = opts.botId ?? ids.DEFAULT_BOT_ID;
    if (!ids.isConsoleId(this.botId))
      throw new AdapterSetupError("Config", `ConsoleAdapter botId ${JSON.stringify(this.botId)} is not valid: use ${ids.ID_RULE}`);
    this.#history = new ConversationHistory(opts.historyLimit ?? 200, opts.maxConversations ?? 1000);
    this.#pages = new PageEvents(opts.keepAliveMs ?? 15_000);
    this.sink = {
      send: async (to, text, opts) => {
        const t = this.#target(to);
        const messageId = randomUUID();
        const at = new Date().toISOString();
        // A notice keeps its severity, which the page styles (static/messages.js, `notice-<severity>`); info stays plain.
        const notice = opts?.severity && opts.severity !== "info" ? { severity: opts.severity } : {};
        this.#history.remember(t, { messageId, from: "bot", text, at, ...notice });
        this.#pages.broadcast({ type: "message", chatId: t.chatId, ...(t.threadId !== undefined && { threadId: t.threadId }), messageId, text, at, ...notice });
        return { messageId };
      },
      edit: async (to, messageId, text) => {
        const t = this.#target(to);
        const entry = this.#history.find(t, messageId);
        if (entry) entry.text = text;
        this.#pages.broadcast({
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
        this.#history.remember(t, { messageId, from: "bot", text: c.text, at, card: c.card });
        this.#pages.broadcast({
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
        const entry = this.#history.find(t, messageId);
        if (entry) Object.assign(entry, { text: c.text, card: c.card });
        this.#pages.broadcast({
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
        this.#pages.broadcast({
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
    this.#pages.closeAll();
  }

  health(): AdapterHealth {
    return this.#state === "running"
      ? { ready: true, detail: `${this.#pages.size} page(s) connected` }
      : { ready: false, detail: this.#state === "idle" ? "not started" : "stopped" };
  }

  /** Replies kept for a conversation (oldest first), as GET /api/console/history returns them. */
  history(chatId: string, threadId?: string): HistoryEntry[] {
    return this.#history.list(chatId, threadId);
  }

  #mount(ctx: AdapterContext): void {
    for (const a of ASSETS) {
      ctx.route("GET", a.path, async () => ({ status: 200, headers: { ...SECURITY_HEADERS, "content-type": a.contentType }, body: assetBody(a) }));
    }
    ctx.route("POST", "/api/console/messages", (req) => this.#postMessage(req));
    ctx.route("GET", "/api/console/events", async () => this.#pages.stream());
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
    this.#history.remember(where, entry);
    let result: InboundResult;
    try {
      result = await this.#ctx.inbound(env);
    } catch (e) {
      this.#history.forget(where, entry);
      throw e;
    }
    if (result.status !== "accepted") this.#history.forget(where, entry);
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
}

/**
 * FakeTelegram: a Telegram Bot API server on 127.0.0.1 for tests.
 *
 *   const tg = new FakeTelegram();
 *   await tg.start();
 *   const bot = new Bot(tg.token, { client: { apiRoot: tg.apiRoot } });
 *
 * Bot side: `/bot<token>/<method>` (GET or POST; JSON, form or multipart),
 * `/file/bot<token>/<file_path>`. getUpdates is real long polling: `offset`
 * confirms (drops) older updates, `limit` caps the batch, `timeout` holds the
 * request until an update arrives. Test side: build and inject updates, plan
 * faults, read what the bot did. See test/fakes/README.md.
 */
import http from "node:http";
import { BodyParseError, FaultPlan, HOST, Signal, closeServer, jsonParam, listen, parseBody, readBody, sendJson } from "./shared.js";
import { createApiMethods, type MethodHandler } from "./telegram/api.js";
import { UpdateBuilder, type MediaOptions, type UserMessageOptions } from "./telegram/build.js";
import { BotLimit, type BotLimitOptions, postsMessage } from "./telegram/bot-limit.js";
import { TgStore } from "./telegram/store.js";
import { TgApiError, type TgCall, type TgChat, type TgFault, type TgMessage, type TgSentMessage, type TgUpdate, type TgUser } from "./telegram/types.js";

export * from "./telegram/types.js";
export { applyParseMode } from "./telegram/format.js";
export { detectEntities, type MediaOptions, type UserMessageOptions } from "./telegram/build.js";

export interface FakeTelegramOptions {
  /** Token the bot must use; other tokens get 401. Default FakeTelegram.DEFAULT_TOKEN. */
  token?: string;
  /** Overrides for the bot's own user (getMe). */
  bot?: Partial<TgUser>;
  /** Upper bound for holding a long poll, in ms (Telegram itself caps timeout at 50 s). */
  maxLongPollMs?: number;
  /**
   * Redeliver a webhook update the bot did not answer with 2xx (or could not
   * be reached for), as Telegram does: up to `attempts` deliveries in all,
   * `delayMs` apart, before the next update is sent. Default: one delivery,
   * no retry.
   */
  webhookRetry?: { attempts: number; delayMs: number };
  /** Enforce a bot-wide limit on posted messages (telegram/bot-limit.ts); by default none. */
  botLimit?: BotLimitOptions;
}

export interface WebhookInfo {
  url: string;
  secret_token?: string;
  allowed_updates?: string[];
  max_connections: number;
  last_error_date?: number;
  last_error_message?: string;
}

export interface WebhookDelivery {
  url: string;
  updateId: number;
  status: number;
  body: string;
  ms: number;
  at: number;
}

interface HeldPoll {
  res: http.ServerResponse;
  call: TgCall;
  limit: number;
  timer: NodeJS.Timeout;
}

/** Update types Telegram leaves out when allowed_updates is empty or never set. */
const DEFAULT_EXCLUDED = new Set(["chat_member", "message_reaction", "message_reaction_count"]);
const SERVER_METHODS = ["getUpdates", "setWebhook", "deleteWebhook", "getWebhookInfo", "logOut", "close"];

export class FakeTelegram {
  static readonly DEFAULT_TOKEN = "123456789:FAKE-switchboard-test-token";

  readonly token: string;
  readonly botUser: TgUser;
  /** Update builders (they register chats/messages but do not deliver). */
  readonly build: UpdateBuilder;

  private readonly store: TgStore;
  private readonly server = http.createServer((req, res) => {
    this.handle(req, res).catch((err: unknown) => sendJson(res, 500, { ok: false, error_code: 500, description: `Internal Server Error: ${String(err)}` }));
  });
  private readonly signal = new Signal();
  private readonly faults = new FaultPlan<TgFault>();
  private readonly methods: Record<string, MethodHandler>;
  private readonly canonical = new Map<string, string>();
  private readonly maxLongPollMs: number;
  private readonly webhookRetry: { attempts: number; delayMs: number };
  private readonly botLimit: BotLimit | undefined;
  private portNumber = 0;
  private queue: TgUpdate[] = [];
  private polls: HeldPoll[] = [];
  private allowedUpdates: Set<string> | null = null;
  private hook: WebhookInfo | null = null;
  private hookChain: Promise<void> = Promise.resolve();
  private callLog: TgCall[] = [];
  /** Every GET of /file/bot<token>/<path>, with its answer's status (the token is not recorded). */
  readonly fileDownloads: Array<{ path: string; status: number }> = [];
  private sentLog: TgSentMessage[] = [];
  private deliveries: WebhookDelivery[] = [];

  constructor(opts: FakeTelegramOptions = {}) {
    this.token = opts.token ?? FakeTelegram.DEFAULT_TOKEN;
    const id = Number(this.token.split(":")[0]) || 7_000_000_001;
    this.botUser = { id, is_bot: true, first_name: "Switchboard Test Bot", username: "switchboard_test_bot", ...opts.bot };
    this.maxLongPollMs = opts.maxLongPollMs ?? 50_000;
    this.webhookRetry = opts.webhookRetry ?? { attempts: 1, delayMs: 0 };
    this.botLimit = opts.botLimit && new BotLimit(opts.botLimit);
    this.store = new TgStore(this.botUser);
    this.build = new UpdateBuilder(this.store);
    this.methods = createApiMethods({ store: this.store, sent: this.sentLog, changed: () => this.signal.notify() });
    for (const name of [...Object.keys(this.methods), ...SERVER_METHODS]) this.canonical.set(name.toLowerCase(), name);
  }

  // ------------------------------------------------------------ lifecycle

  async start(): Promise<void> {
    this.portNumber = await listen(this.server);
  }

  async close(): Promise<void> {
    for (const p of this.polls) clearTimeout(p.timer);
    this.polls = [];
    await closeServer(this.server);
  }

  /** Forgets updates, chats, calls, faults and the webhook. update_id keeps increasing. */
  reset(): void {
    for (const p of this.polls) this.answer(p.res, p.call, 200, { ok: true, result: [] });
    this.polls = [];
    this.queue = [];
    this.allowedUpdates = null;
    this.hook = null;
    this.callLog.length = 0;
    this.sentLog.length = 0;
    this.deliveries.length = 0;
    this.faults.clear();
    this.store.reset();
  }

  get port(): number {
    return this.portNumber;
  }
  /** The apiRoot for grammY (`client.apiRoot`), without trailing slash. */
  get apiRoot(): string {
    return `http://${HOST}:${this.portNumber}`;
  }
  get url(): string {
    return this.apiRoot;
  }
  get apiUrl(): string {
    return `${this.apiRoot}/bot${this.token}`;
  }

  // ------------------------------------------------------------ world

  user(firstName: string, extra?: Partial<TgUser>): TgUser {
    return this.build.user(firstName, extra);
  }
  privateChat(user: TgUser): TgChat {
    return this.build.privateChat(user);
  }
  group(title: string, id?: number): TgChat {
    return this.build.group(title, id);
  }
  supergroup(title: string, opts?: { forum?: boolean; id?: number; username?: string }): TgChat {
    return this.build.supergroup(title, opts);
  }
  forumTopic(chat: TgChat, name: string, creator?: TgUser): number {
    return this.build.forumTopic(chat, name, creator);
  }
  /** A stored message (user's or bot's). */
  message(chatId: number, messageId: number): TgMessage | undefined {
    return this.store.getMessage(chatId, messageId);
  }

  // ------------------------------------------------------------ injection

  /**
   * Delivers an update: queued for getUpdates, or POSTed to the webhook when
   * the bot has called setWebhook. Missing update_id is assigned.
   */
  inject(update: Partial<TgUpdate>): TgUpdate {
    const u = this.build.stamp(update);
    if (this.hook) this.autoDeliver(u);
    else {
      this.queue.push(u);
      this.queue.sort((a, b) => a.update_id - b.update_id);
      this.wakePolls();
    }
    this.signal.notify();
    return u;
  }
  /** Upgrades a basic group to a supergroup: delivers both migration service messages; returns the new chat. */
  migrateToSupergroup(group: TgChat, by: TgUser, newId?: number): TgChat {
    const { supergroup, updates } = this.build.migrateToSupergroup(group, by, newId);
    for (const u of updates) this.inject(u);
    return supergroup;
  }
  /**
   * Delivers several updates that happened at once, as Telegram does: one
   * getUpdates answer holds them all (up to its limit), and a webhook gets
   * them over parallel connections (setWebhook's max_connections, default 40).
   */
  injectMany(updates: Array<Partial<TgUpdate>>): TgUpdate[] {
    const stamped = updates.map((u) => this.build.stamp(u));
    const hook = this.hook;
    if (hook) {
      const parallel = Math.max(1, Math.min(100, Number(hook.max_connections ?? 40) || 40));
      let next = 0;
      const worker = async () => {
        while (next < stamped.length) {
          const u = stamped[next++]!;
          await this.deliverWebhook(hook.url, u, hook.secret_token).catch(() => undefined);
        }
      };
      this.hookChain = this.hookChain.then(() => Promise.all(Array.from({ length: Math.min(parallel, stamped.length) }, worker)).then(() => undefined));
    } else {
      this.queue.push(...stamped);
      this.queue.sort((a, b) => a.update_id - b.update_id);
      this.wakePolls();
    }
    this.signal.notify();
    return stamped;
  }
  userMessage(o: UserMessageOptions): TgUpdate {
    return this.inject(this.build.message(o));
  }
  mention(o: UserMessageOptions): TgUpdate {
    return this.inject(this.build.mention(o));
  }
  command(o: Omit<UserMessageOptions, "text"> & { command: string; args?: string; addressed?: boolean }): TgUpdate {
    return this.inject(this.build.command(o));
  }
  editMessage(message: TgMessage, text: string): TgUpdate {
    return this.inject(this.build.edit(message, text));
  }
  photo(o: MediaOptions & { width?: number; height?: number }): TgUpdate {
    return this.inject(this.build.photo(o));
  }
  document(o: MediaOptions & { fileName?: string; mimeType?: string }): TgUpdate {
    return this.inject(this.build.document(o));
  }
  voice(o: MediaOptions & { duration?: number }): TgUpdate {
    return this.inject(this.build.voice(o));
  }
  callbackQuery(o: { from: TgUser; message: TgMessage; data: string }): TgUpdate {
    return this.inject(this.build.callbackQuery(o));
  }
  /** Updates not yet confirmed by a getUpdates offset. */
  pending(): TgUpdate[] {
    return [...this.queue];
  }

  /** POSTs an update the way Telegram calls a webhook. Returns the bot's HTTP answer. */
  async deliverWebhook(url: string, update: Partial<TgUpdate>, secret?: string): Promise<WebhookDelivery> {
    const u = update.update_id === undefined ? this.build.stamp(update) : (update as TgUpdate);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (secret !== undefined) headers["x-telegram-bot-api-secret-token"] = secret;
    const t0 = performance.now();
    const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(u) });
    const body = await res.text();
    const d: WebhookDelivery = { url, updateId: u.update_id, status: res.status, body, ms: performance.now() - t0, at: Date.now() };
    this.deliveries.push(d);
    this.signal.notify();
    return d;
  }
  get webhook(): WebhookInfo | null {
    return this.hook ? { ...this.hook } : null;
  }
  webhookDeliveries(): WebhookDelivery[] {
    return [...this.deliveries];
  }

  // ------------------------------------------------------------ faults

  /** Answers the next `count` calls of `method` with an error (e.g. `{ status: 500 }`). */
  failNext(method: string, fault: TgFault, count = 1): void {
    this.faults.add(method, fault, count);
  }
  /** 429 `Too Many Requests: retry after X` with `parameters.retry_after` for the next `count` calls (those `when` accepts, if given). */
  rateLimitNext(method: string, retryAfter = 1, count = 1, when?: TgFault["when"]): void {
    this.faults.add(method, { status: 429, retryAfter, ...(when && { when }) }, count);
  }

  // ------------------------------------------------------------ records

  /** Sends answered 429 by the bot-wide limit (`botLimit`). */
  get botLimitRejections(): number {
    return this.botLimit?.rejected ?? 0;
  }

  get calls(): readonly TgCall[] {
    return this.callLog;
  }
  callsTo(method: string): TgCall[] {
    return this.callLog.filter((c) => c.method.toLowerCase() === method.toLowerCase());
  }
  /** Messages the bot sent with sendMessage (latest text; `history` has every version). */
  sent(filter?: { chatId?: number; threadId?: number }): TgSentMessage[] {
    return this.sentLog.filter(
      (s) => (filter?.chatId === undefined || s.chatId === filter.chatId) && (filter?.threadId === undefined || s.threadId === filter.threadId),
    );
  }
  /** Commands set with setMyCommands for a scope (default scope) and language. */
  commands(scope: unknown = { type: "default" }, languageCode = ""): { command: string; description: string }[] {
    return this.store.commands.get(`${JSON.stringify(scope)}|${languageCode}`) ?? [];
  }
  /** Whether the bot left the chat (leaveChat); the fake then refuses its sends there with 403. */
  hasLeft(chatId: number): boolean {
    return this.store.left.has(chatId);
  }
  /** The answerCallbackQuery parameters for a callback query id, once answered. */
  callbackAnswer(id: string): Record<string, unknown> | undefined {
    return this.store.callbackQueries.get(id)?.answer;
  }

  /** Resolves with the predicate's first truthy value; re-checked whenever the fake records something. */
  waitFor<T>(predicate: () => T | undefined | null | false, timeoutMs = 3000): Promise<T> {
    return this.signal.waitFor(predicate, timeoutMs, () => `Last calls: ${this.describeCalls()}`);
  }
  /** Waits for an answered call of `method` matching `pred`. */
  waitForCall(method: string, pred: (c: TgCall) => boolean = () => true, timeoutMs = 3000): Promise<TgCall> {
    return this.waitFor(() => this.callsTo(method).find((c) => c.status !== undefined && pred(c)), timeoutMs);
  }

  private describeCalls(): string {
    return this.callLog
      .slice(-8)
      .map((c) => `${c.method}->${c.status ?? "pending"}${c.error ? ` (${c.error})` : ""}`)
      .join(", ");
  }

  // ------------------------------------------------------------ HTTP

  private answer(res: http.ServerResponse, call: TgCall | undefined, status: number, body: Record<string, unknown>): void {
    if (call) {
      call.status = status;
      if (body.ok) call.result = body.result;
      else call.error = String(body.description);
    }
    if (!res.writableEnded && !res.destroyed) {
      const text = JSON.stringify(body);
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    }
    this.signal.notify();
  }

  private fail(res: http.ServerResponse, call: TgCall | undefined, e: TgApiError): void {
    const body: Record<string, unknown> = { ok: false, error_code: e.code, description: e.description };
    if (e.parameters) body.parameters = e.parameters;
    this.answer(res, call, e.code, body);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // Stamped on arrival, before the body is read: the time the platform would see.
    const at = this.botLimit?.now() ?? Date.now();
    const url = new URL(req.url ?? "/", "http://fake");
    const raw = await readBody(req);
    const file = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (file) return this.serveFile(res, file[1]!, decodeURIComponent(file[2]!));
    const m = /^\/bot([^/]+)\/(?:test\/)?([A-Za-z0-9_]+)\/?$/.exec(url.pathname);
    if (!m) return this.fail(res, undefined, new TgApiError(404, "Not Found"));
    if (decodeURIComponent(m[1]!) !== this.token) return this.fail(res, undefined, new TgApiError(401, "Unauthorized"));
    const method = this.canonical.get(m[2]!.toLowerCase()) ?? m[2]!;
    let params: Record<string, unknown>;
    try {
      params = (await parseBody(req, raw, url.searchParams)).params;
    } catch (err) {
      const msg = err instanceof BodyParseError ? err.message : String(err);
      return this.fail(res, undefined, new TgApiError(400, `Bad Request: ${msg}`));
    }
    const call: TgCall = { method, params, at };
    this.callLog.push(call);
    this.signal.notify();

    const fault = this.faults.take(method, (f) => !f.when || f.when(params));
    if (fault) {
      if (fault.status === 429) {
        const ra = fault.retryAfter ?? 1;
        return this.fail(res, call, new TgApiError(429, fault.description ?? `Too Many Requests: retry after ${ra}`, { retry_after: ra }));
      }
      return this.fail(res, call, new TgApiError(fault.status, fault.description ?? (fault.status >= 500 ? "Internal Server Error" : "Bad Request")));
    }
    if (this.botLimit && postsMessage(method) && this.botLimit.over(at))
      return this.fail(res, call, new TgApiError(429, "Too Many Requests: retry after 1", { retry_after: 1 }));
    try {
      if (method === "getUpdates") return this.getUpdates(params, res, call);
      const result = this.serverMethod(method, params) ?? this.methods[method]?.(params);
      if (result === undefined) return this.fail(res, call, new TgApiError(404, "Not Found"));
      this.answer(res, call, 200, { ok: true, result });
    } catch (err) {
      if (err instanceof TgApiError) return this.fail(res, call, err);
      this.fail(res, call, new TgApiError(500, `Internal Server Error: ${String(err)}`));
    }
  }

  private serveFile(res: http.ServerResponse, token: string, path: string): void {
    const f = [...this.store.files.values()].find((x) => x.file_path === path);
    this.fileDownloads.push({ path, status: token !== this.token || !f ? 404 : 200 });
    if (token !== this.token || !f) return this.fail(res, undefined, new TgApiError(404, "Not Found"));
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": f.data.length });
    res.end(f.data);
  }

  /** Methods that change the server's delivery state. Returns undefined for other methods. */
  private serverMethod(method: string, p: Record<string, unknown>): unknown {
    switch (method) {
      case "setWebhook": {
        const url = String(p.url ?? "");
        if (url === "") return this.serverMethod("deleteWebhook", p);
        if (!/^https?:\/\//.test(url)) throw new TgApiError(400, "Bad Request: bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443");
        const secret = p.secret_token === undefined ? undefined : String(p.secret_token);
        if (secret !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(secret))
          throw new TgApiError(400, "Bad Request: secret token contains unallowed characters");
        if (p.drop_pending_updates === true || p.drop_pending_updates === "true") this.queue = [];
        const allowed = jsonParam<string[]>(p.allowed_updates);
        this.hook = { url, max_connections: Number(p.max_connections ?? 40) };
        if (secret !== undefined) this.hook.secret_token = secret;
        if (Array.isArray(allowed)) this.hook.allowed_updates = allowed;
        for (const poll of this.polls.splice(0)) {
          clearTimeout(poll.timer);
          this.fail(poll.res, poll.call, new TgApiError(409, "Conflict: terminated by setWebhook request"));
        }
        const pending = this.queue.splice(0);
        for (const u of pending) this.autoDeliver(u);
        return true;
      }
      case "deleteWebhook":
        if (p.drop_pending_updates === true || p.drop_pending_updates === "true") this.queue = [];
        this.hook = null;
        return true;
      case "getWebhookInfo": {
        const { secret_token: _s, ...info } = this.hook ?? { url: "", max_connections: 40 };
        return { ...info, has_custom_certificate: false, pending_update_count: this.queue.length };
      }
      case "logOut":
      case "close":
        return true;
      default:
        return undefined;
    }
  }

  private isAllowed(u: TgUpdate): boolean {
    const type = Object.keys(u).find((k) => k !== "update_id") ?? "";
    return this.allowedUpdates ? this.allowedUpdates.has(type) : !DEFAULT_EXCLUDED.has(type);
  }

  private deliverable(limit: number): TgUpdate[] {
    return this.queue.filter((u) => this.isAllowed(u)).slice(0, limit);
  }

  private getUpdates(p: Record<string, unknown>, res: http.ServerResponse, call: TgCall): void {
    if (this.hook)
      return this.fail(
        res,
        call,
        new TgApiError(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"),
      );
    const offset = Number(p.offset ?? 0) || 0;
    const limit = Math.min(100, Math.max(1, Number(p.limit ?? 100) || 100));
    const timeout = Math.max(0, Number(p.timeout ?? 0) || 0);
    const allowed = jsonParam<string[]>(p.allowed_updates);
    if (Array.isArray(allowed)) this.allowedUpdates = allowed.length ? new Set(allowed) : null;
    if (offset > 0) this.queue = this.queue.filter((u) => u.update_id >= offset);
    else if (offset < 0) this.queue = this.queue.slice(offset);
    // Telegram allows one getUpdates at a time: the older request is terminated.
    for (const old of this.polls.splice(0)) {
      clearTimeout(old.timer);
      this.fail(old.res, old.call, new TgApiError(409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"));
    }
    const ready = this.deliverable(limit);
    if (ready.length || timeout === 0) return this.answer(res, call, 200, { ok: true, result: ready });
    const poll: HeldPoll = {
      res,
      call,
      limit,
      timer: setTimeout(
        () => {
          this.polls = this.polls.filter((x) => x !== poll);
          this.answer(res, call, 200, { ok: true, result: [] });
        },
        Math.min(timeout * 1000, this.maxLongPollMs),
      ),
    };
    poll.timer.unref();
    this.polls.push(poll);
    res.on("close", () => {
      clearTimeout(poll.timer);
      this.polls = this.polls.filter((x) => x !== poll);
    });
  }

  private wakePolls(): void {
    for (const poll of [...this.polls]) {
      const ready = this.deliverable(poll.limit);
      if (!ready.length) continue;
      clearTimeout(poll.timer);
      this.polls = this.polls.filter((x) => x !== poll);
      this.answer(poll.res, poll.call, 200, { ok: true, result: ready });
    }
  }

  private autoDeliver(u: TgUpdate): void {
    const hook = this.hook;
    if (!hook) return;
    this.hookChain = this.hookChain.then(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          const d = await this.deliverWebhook(hook.url, u, hook.secret_token);
          if (d.status >= 200 && d.status <= 299) return;
          hook.last_error_date = Math.floor(Date.now() / 1000);
          hook.last_error_message = `Wrong response from the webhook: ${d.status}`;
        } catch (err) {
          hook.last_error_date = Math.floor(Date.now() / 1000);
          hook.last_error_message = `Connection refused: ${String(err)}`;
          this.signal.notify();
        }
        if (attempt >= this.webhookRetry.attempts || this.hook !== hook) return;
        await new Promise((r) => setTimeout(r, this.webhookRetry.delayMs).unref());
      }
    });
  }
}

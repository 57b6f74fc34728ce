/**
 * FakeDiscord: Discord's REST API (v10) and gateway on 127.0.0.1 for tests.
 *
 *   const dc = new FakeDiscord();
 *   await dc.start();
 *   const client = new Client({ intents, partials, rest: { api: dc.apiUrl } });
 *   await client.login(dc.token);
 *
 * REST lives below `/api/v10`; `GET /api/v10/gateway/bot` points the client at
 * the fake's own gateway (`ws://127.0.0.1:PORT/gateway`). See
 * test/fakes/README.md for the injection and fault APIs.
 */
import http from "node:http";
import { BodyParseError, FaultPlan, HOST, Signal, closeServer, jsonParam, listen, parseBody, readBody, sendJson } from "./shared.js";
import { DiscordGateway, type GatewaySession, type ResumeRecord } from "./discord/gateway.js";
import { DiscordRest } from "./discord/rest.js";
import { DiscordCdn } from "./discord/cdn.js";
import {
  ApplicationFlags,
  DApiError,
  Intents,
  type DChannel,
  type DFault,
  type DGatewayFrame,
  type DMessage,
  type DRestCall,
  type DSentMessage,
  type DUser,
} from "./discord/types.js";
import { DiscordWorld, snowflake, type GuildFixture, type GuildSpec, type StoredCommand } from "./discord/world.js";

export * from "./discord/types.js";
export type SessionInfo = Omit<GatewaySession, "history" | "ws" | "identify"> & { connected: boolean };
export { guildIdForShard, shardFor, snowflake, type GuildFixture, type GuildSpec } from "./discord/world.js";

export interface FakeDiscordOptions {
  /** Bot token the client must present (REST `Bot <token>`, IDENTIFY/RESUME token). */
  token?: string;
  /** HELLO heartbeat_interval (ms). Default 41250 like Discord. */
  heartbeatIntervalMs?: number;
  /** Answer heartbeats with op 11 (default true; false makes clients zombie-reconnect). */
  ackHeartbeats?: boolean;
  /** session_start_limit.max_concurrency from /gateway/bot. Default 16 so sharded clients identify without the 5 s throttle. */
  maxConcurrency?: number;
  /** `shards` recommended by /gateway/bot (used by `shards: 'auto'`). Default 1. */
  recommendedShards?: number;
  /** Send MESSAGE_CREATE/UPDATE for the bot's own messages, as Discord does. Default true. */
  echoBotMessages?: boolean;
  /** An interaction must be answered within this many ms (Discord: 3000). */
  interactionAckDeadlineMs?: number;
  bot?: Partial<DUser>;
  /**
   * The application's flags. Default ApplicationFlags.GatewayMessageContentLimited
   * (the Message Content intent on, under 100 servers); 0 makes IDENTIFY with
   * MessageContent fail with 4014, as Discord does.
   */
  applicationFlags?: number;
}

export interface UserMessageInput {
  /** Channel object or id (guild text channel, thread, or a DM channel from dmChannel()). */
  channel: DChannel | string;
  author: DUser;
  content: string;
  /** Message (or its id, same channel) this one replies to. */
  replyTo?: DMessage | string;
  /** Mentioned users; default: parsed from <@id> in content, plus the replied-to author when `ping` (default true). */
  mentions?: DUser[];
  ping?: boolean;
  /** With `data`, the file is served by the fake's CDN (`fake.cdn`) at a signed URL, and its size is the data's. */
  attachments?: { filename: string; size?: number; content_type?: string; url?: string; data?: Buffer; waveform?: string; duration_secs?: number }[];
  extra?: Record<string, unknown>;
}

export interface SlashCommandInput {
  name: string;
  user: DUser;
  channel: DChannel | string;
  /** Options by name (string -> type 3, integer -> 4, number -> 10, boolean -> 5), or raw option objects. */
  options?: Record<string, string | number | boolean> | Record<string, unknown>[];
  locale?: string;
}

export interface RateLimitOptions {
  retryAfter?: number;
  count?: number;
  scope?: "user" | "global" | "shared";
  global?: boolean;
  bucket?: string;
}

/**
 * Matches "METHOD /path" keys. Strings may omit the method and use `:param`
 * segments or `*`: "POST /channels/:id/messages", "/interactions/*".
 */
function routeMatcher(route: string | RegExp): (key: string) => boolean {
  if (route instanceof RegExp) return (k) => route.test(k) || route.test(k.slice(k.indexOf(" ") + 1));
  const m = /^(GET|POST|PUT|PATCH|DELETE)\s+(.*)$/i.exec(route.trim());
  const method = m ? m[1]!.toUpperCase() : "[A-Z]+";
  const path = (m ? m[2]! : route.trim())
    .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
    .replace(/:[a-zA-Z]+/g, "[^/]+")
    .replace(/\*/g, ".*");
  const re = new RegExp(`^${method} ${path}$`);
  return (k) => re.test(k);
}

export class FakeDiscord {
  static readonly DEFAULT_TOKEN = "RkFLRS1ESVNDT1JELUJPVA.fake.switchboard-test-token";

  readonly token: string;
  readonly bot: DUser;
  readonly applicationId: string;
  readonly world: DiscordWorld;
  /** Attachments users send with `data`, served at signed CDN URLs on this fake; `cdn.downloads` records each GET. */
  readonly cdn = new DiscordCdn(() => this.url);
  readonly gateway: DiscordGateway;

  private readonly server = http.createServer((req, res) => {
    this.handle(req, res).catch((err: unknown) => sendJson(res, 500, { message: `500: Internal Server Error (${String(err)})`, code: 0 }));
  });
  private readonly signal = new Signal();
  private readonly faults = new FaultPlan<DFault>();
  private readonly rest: DiscordRest;
  private readonly opts: Required<Omit<FakeDiscordOptions, "token" | "bot">>;
  private portNumber = 0;
  private calls: DRestCall[] = [];
  private sentLog: DSentMessage[] = [];

  constructor(opts: FakeDiscordOptions = {}) {
    this.token = opts.token ?? FakeDiscord.DEFAULT_TOKEN;
    this.opts = {
      heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 41_250,
      ackHeartbeats: opts.ackHeartbeats ?? true,
      maxConcurrency: opts.maxConcurrency ?? 16,
      recommendedShards: opts.recommendedShards ?? 1,
      echoBotMessages: opts.echoBotMessages ?? true,
      interactionAckDeadlineMs: opts.interactionAckDeadlineMs ?? 3000,
      applicationFlags: opts.applicationFlags ?? ApplicationFlags.GatewayMessageContentLimited,
    };
    this.bot = { id: snowflake(), username: "switchboard-test-bot", discriminator: "0", global_name: null, avatar: null, bot: true, ...opts.bot };
    this.applicationId = this.bot.id;
    this.world = new DiscordWorld(this.bot);
    const notify = (): void => this.signal.notify();
    this.gateway = new DiscordGateway(
      this.world,
      {
        token: this.token,
        heartbeatIntervalMs: this.opts.heartbeatIntervalMs,
        ackHeartbeats: this.opts.ackHeartbeats,
        gatewayUrl: () => this.gatewayUrl,
        resumeUrl: () => `ws://${HOST}:${this.portNumber}/gateway-resume`,
        applicationId: this.applicationId,
        applicationFlags: this.opts.applicationFlags,
      },
      notify,
    );
    this.rest = new DiscordRest({
      world: this.world,
      gateway: this.gateway,
      sent: this.sentLog,
      applicationId: this.applicationId,
      applicationFlags: this.opts.applicationFlags,
      token: this.token,
      gatewayInfo: () => ({
        url: this.gatewayUrl,
        shards: this.opts.recommendedShards,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: this.opts.maxConcurrency },
      }),
      echoBotMessages: this.opts.echoBotMessages,
      interactionAckDeadlineMs: this.opts.interactionAckDeadlineMs,
      changed: notify,
    });
    this.server.on("upgrade", (req, socket, head) => this.gateway.handleUpgrade(req, socket, head));
  }

  // ------------------------------------------------------------ lifecycle

  async start(): Promise<void> {
    this.portNumber = await listen(this.server);
  }

  async close(): Promise<void> {
    await this.gateway.close();
    await closeServer(this.server);
  }

  /** Forgets guilds, users, messages, calls, faults and ended sessions. Live gateway sessions stay. */
  reset(): void {
    this.world.reset();
    this.gateway.reset();
    this.rest.reset();
    this.calls = [];
    this.sentLog.length = 0;
    this.faults.clear();
  }

  get port(): number {
    return this.portNumber;
  }
  get url(): string {
    return `http://${HOST}:${this.portNumber}`;
  }
  /** For discord.js `rest: { api }` (no trailing slash, no version). */
  get apiUrl(): string {
    return `${this.url}/api`;
  }
  get gatewayUrl(): string {
    return `ws://${HOST}:${this.portNumber}/gateway`;
  }

  // ------------------------------------------------------------ world

  user(username: string, extra?: Partial<DUser>): DUser {
    return this.world.user(username, extra);
  }
  /** Adds a guild; dispatched as GUILD_CREATE to connected sessions of its shard (and on IDENTIFY). */
  addGuild(spec?: GuildSpec): GuildFixture {
    const g = this.world.addGuild(spec);
    this.gateway.route("GUILD_CREATE", g.raw, { guildId: g.id });
    return g;
  }
  dmChannel(user: DUser): DChannel {
    return this.world.dmChannel(user);
  }
  /** Whether the bot left the guild (DELETE /users/@me/guilds/:id). */
  hasLeft(guildId: string): boolean {
    return this.world.left.has(guildId);
  }
  message(channelId: string, id: string): DMessage | undefined {
    return this.world.getMessage(channelId, id);
  }

  // ------------------------------------------------------------ injection

  private resolveChannel(c: DChannel | string): DChannel {
    const ch = typeof c === "string" ? this.world.channels.get(c) : (this.world.channels.get(c.id) ?? c);
    if (!ch) throw new Error(`FakeDiscord: unknown channel ${String(c)}`);
    if (!this.world.channels.has(ch.id)) this.world.channels.set(ch.id, ch);
    return ch;
  }

  private messageEvent(msg: DMessage, channel: DChannel): Record<string, unknown> {
    const ev: Record<string, unknown> = { ...msg, channel_type: channel.type };
    if (msg.guild_id) {
      ev.member = this.world.member(msg.author, false);
      ev.mentions = msg.mentions.map((u) => ({ ...u, member: this.world.member(u, false) }));
    }
    return ev;
  }

  /** A user posts a message: MESSAGE_CREATE (DMs carry channel_type 1 and no guild_id). */
  userMessage(o: UserMessageInput): DMessage {
    const channel = this.resolveChannel(o.channel);
    const replyTo = typeof o.replyTo === "string" ? this.world.getMessage(channel.id, o.replyTo) : o.replyTo;
    if (o.replyTo !== undefined && !replyTo) throw new Error(`FakeDiscord: message ${String(o.replyTo)} not found`);
    const mentions = [...(o.mentions ?? this.world.mentionedUsers(o.content))];
    if (replyTo && o.ping !== false && !mentions.some((u) => u.id === replyTo.author.id)) mentions.push(replyTo.author);
    this.world.users.set(o.author.id, o.author);
    const msg = this.world.message({
      channel,
      author: o.author,
      content: o.content,
      mentions,
      ...(replyTo ? { replyTo } : {}),
      ...(o.extra ? { extra: o.extra } : {}),
    });
    if (o.attachments)
      msg.attachments = o.attachments.map(({ data, ...a }) => {
        const id = snowflake();
        const type = a.content_type ?? "application/octet-stream";
        const served = data && this.cdn.add(channel.id, id, a.filename, data, type);
        return {
          id,
          size: data?.length ?? 1024,
          content_type: type,
          url: `https://cdn.fake.invalid/${a.filename}`,
          proxy_url: `https://media.fake.invalid/${a.filename}`,
          ...a,
          ...(served && { url: served, proxy_url: served }),
        };
      });
    this.world.storeMessage(msg);
    this.gateway.route(
      "MESSAGE_CREATE",
      this.messageEvent(msg, channel),
      msg.guild_id ? { guildId: msg.guild_id, intent: Intents.GuildMessages } : { intent: Intents.DirectMessages },
    );
    return msg;
  }

  /**
   * The user forwards `message` into `channel`: MESSAGE_CREATE with empty
   * content, a message_reference of type 1 (FORWARD), the HAS_SNAPSHOT flag
   * and one message snapshot, which (as on Discord) carries the content but
   * not the original author.
   */
  forwardMessage(o: { channel: DChannel | string; author: DUser; message: DMessage | { content: string; channel_id?: string } }): DMessage {
    const channel = this.resolveChannel(o.channel);
    this.world.users.set(o.author.id, o.author);
    const src: DMessage =
      "id" in o.message
        ? o.message
        : this.world.message({ channel: this.resolveChannel(o.message.channel_id ?? channel.id), author: this.world.bot, content: o.message.content });
    const msg = this.world.message({ channel, author: o.author, content: "", mentions: [] });
    msg.flags = 1 << 14; // HAS_SNAPSHOT
    msg.message_reference = { type: 1, message_id: src.id, channel_id: src.channel_id, ...(src.guild_id ? { guild_id: src.guild_id } : {}) };
    msg.message_snapshots = [
      {
        message: {
          type: src.type,
          content: src.content,
          embeds: src.embeds,
          attachments: src.attachments,
          timestamp: src.timestamp,
          edited_timestamp: src.edited_timestamp,
          flags: src.flags,
          mentions: src.mentions,
          mention_roles: src.mention_roles,
        },
      },
    ];
    this.world.storeMessage(msg);
    this.gateway.route(
      "MESSAGE_CREATE",
      this.messageEvent(msg, channel),
      msg.guild_id ? { guildId: msg.guild_id, intent: Intents.GuildMessages } : { intent: Intents.DirectMessages },
    );
    return msg;
  }

  /** The user edits their message: MESSAGE_UPDATE. */
  editUserMessage(msg: DMessage, content: string): DMessage {
    const stored = this.world.getMessage(msg.channel_id, msg.id) ?? msg;
    stored.content = content;
    stored.edited_timestamp = new Date().toISOString();
    stored.mentions = this.world.mentionedUsers(content);
    const channel = this.resolveChannel(stored.channel_id);
    this.gateway.route(
      "MESSAGE_UPDATE",
      this.messageEvent(stored, channel),
      stored.guild_id ? { guildId: stored.guild_id, intent: Intents.GuildMessages } : { intent: Intents.DirectMessages },
    );
    return stored;
  }

  /** The user deletes their message: MESSAGE_DELETE, which carries only the ids (as Discord sends it). */
  deleteUserMessage(msg: DMessage): void {
    this.world.messages.delete(`${msg.channel_id}:${msg.id}`);
    const ev: Record<string, unknown> = { id: msg.id, channel_id: msg.channel_id };
    if (msg.guild_id) ev.guild_id = msg.guild_id;
    this.gateway.route("MESSAGE_DELETE", ev, msg.guild_id ? { guildId: msg.guild_id, intent: Intents.GuildMessages } : { intent: Intents.DirectMessages });
  }

  /** A user runs a slash command: INTERACTION_CREATE (type 2, chat input). Returns the interaction payload. */
  slashCommand(o: SlashCommandInput): Record<string, unknown> {
    const channel = this.resolveChannel(o.channel);
    const guildId = channel.guild_id;
    const registered: StoredCommand[] = [...(guildId ? (this.world.guildCommands.get(guildId) ?? []) : []), ...this.world.globalCommands];
    const cmd = registered.find((c) => c.name === o.name && c.type === 1);
    const options = Array.isArray(o.options)
      ? o.options
      : Object.entries(o.options ?? {}).map(([name, value]) => ({
          name,
          type: typeof value === "string" ? 3 : typeof value === "boolean" ? 5 : Number.isInteger(value) ? 4 : 10,
          value,
        }));
    const id = snowflake();
    const token = this.world.newToken();
    const perms = "2248473465835073";
    const data: Record<string, unknown> = { id: cmd?.id ?? snowflake(), name: o.name, type: 1 };
    if (options.length) data.options = options;
    if (guildId) data.guild_id = guildId;
    const payload: Record<string, unknown> = {
      id,
      application_id: this.applicationId,
      type: 2,
      data,
      channel: { ...channel, permissions: perms },
      channel_id: channel.id,
      token,
      version: 1,
      app_permissions: perms,
      locale: o.locale ?? "en-US",
      entitlements: [],
      authorizing_integration_owners: guildId ? { "0": guildId } : { "1": o.user.id },
      context: guildId ? 0 : 1,
      attachment_size_limit: 26_214_400,
    };
    if (guildId) {
      payload.guild_id = guildId;
      payload.guild_locale = "en-US";
      payload.member = { ...this.world.member(o.user), permissions: perms };
    } else payload.user = o.user;
    this.world.users.set(o.user.id, o.user);
    this.world.interactions.set(id, { id, token, createdAt: Date.now(), channelId: channel.id, ...(guildId ? { guildId } : {}), payload, followups: [] });
    this.gateway.route("INTERACTION_CREATE", payload, guildId ? { guildId } : {});
    return payload;
  }

  /**
   * A user presses a button of a message (MESSAGE_COMPONENT, INTERACTION_CREATE
   * type 3): the payload carries the message, the button's custom_id and
   * component_type 2, and is answered through the interaction callback like any
   * interaction (within interactionAckDeadlineMs). Discord only sends presses of
   * buttons a message shows: a custom_id the message lacks is refused here.
   */
  pressButton(o: { user: DUser; message: DMessage; customId: string; locale?: string }): Record<string, unknown> {
    const channel = this.resolveChannel(o.message.channel_id);
    const current = this.world.getMessage(channel.id, o.message.id) ?? o.message;
    const buttons = ((current.components as Array<{ components?: Array<{ custom_id?: string }> }> | undefined) ?? []).flatMap((r) => r.components ?? []);
    if (!buttons.some((b) => b.custom_id === o.customId)) throw new Error(`message ${o.message.id} shows no button ${o.customId}`);
    const guildId = channel.guild_id;
    const id = snowflake();
    const token = this.world.newToken();
    const perms = "2248473465835073";
    const payload: Record<string, unknown> = {
      id,
      application_id: this.applicationId,
      type: 3,
      data: { custom_id: o.customId, component_type: 2 },
      channel: { ...channel, permissions: perms },
      channel_id: channel.id,
      message: current,
      token,
      version: 1,
      app_permissions: perms,
      locale: o.locale ?? "en-US",
      entitlements: [],
      authorizing_integration_owners: guildId ? { "0": guildId } : { "1": o.user.id },
      context: guildId ? 0 : 1,
      attachment_size_limit: 26_214_400,
    };
    if (guildId) {
      payload.guild_id = guildId;
      payload.guild_locale = "en-US";
      payload.member = { ...this.world.member(o.user), permissions: perms };
    } else payload.user = o.user;
    this.world.users.set(o.user.id, o.user);
    this.world.interactions.set(id, { id, token, createdAt: Date.now(), channelId: channel.id, ...(guildId ? { guildId } : {}), payload, followups: [] });
    this.gateway.route("INTERACTION_CREATE", payload, guildId ? { guildId } : {});
    return payload;
  }

  /** Dispatches any event, routed by guild like Discord. Returns how many sessions got it. */
  dispatch(t: string, d: Record<string, unknown>, o: { guildId?: string; intent?: number } = {}): number {
    return this.gateway.route(t, d, o);
  }

  // ------------------------------------------------------------ gateway control

  /** See DiscordGateway.forceDisconnect: resumable (code 4000 / op 7) or not (op 9). */
  forceDisconnect(o?: { resumable?: boolean; code?: number; reconnectOpcode?: boolean; shardId?: number }): number {
    return this.gateway.forceDisconnect(o);
  }
  requestHeartbeat(): void {
    this.gateway.requestHeartbeat();
  }
  /** Gateway sessions: shard, intents, last seq, connected, ended, resume count. */
  sessions(): SessionInfo[] {
    return this.gateway.sessions.map(({ history: _h, ws, identify: _i, ...s }) => ({ ...s, connected: ws !== null }));
  }
  get identifies(): { connection: number; url: string; d: Record<string, unknown>; at: number }[] {
    return this.gateway.identifies;
  }
  get resumes(): ResumeRecord[] {
    return this.gateway.resumes;
  }
  get frames(): DGatewayFrame[] {
    return this.gateway.frames;
  }
  get heartbeats(): number {
    return this.gateway.heartbeats;
  }

  // ------------------------------------------------------------ faults

  /**
   * The next `count` requests matching `route` get 429 with Discord's headers
   * (Retry-After, X-RateLimit-*, X-RateLimit-Scope) and body { message, retry_after, global }.
   */
  rateLimitNext(route: string | RegExp, o: RateLimitOptions = {}): void {
    const scope = o.scope ?? (o.global ? "global" : "user");
    this.faults.add(
      routeMatcher(route),
      {
        kind: "ratelimit",
        retryAfter: o.retryAfter ?? 1,
        scope,
        global: o.global ?? scope === "global",
        bucket: o.bucket ?? "fakebucket0000000000000000000000",
      },
      o.count ?? 1,
    );
  }
  /** The next `count` requests matching `route` fail with `status` and Discord error body {code, message}. */
  failNext(route: string | RegExp, o: { status: number; code?: number; message?: string }, count = 1): void {
    this.faults.add(
      routeMatcher(route),
      { kind: "error", status: o.status, code: o.code ?? 0, message: o.message ?? (o.status >= 500 ? "500: Internal Server Error" : "Fake failure") },
      count,
    );
  }

  // ------------------------------------------------------------ records

  /** REST calls, optionally only those matching a route pattern ("POST /channels/:id/messages"). */
  restCalls(route?: string | RegExp): DRestCall[] {
    if (!route) return [...this.calls];
    const match = routeMatcher(route);
    return this.calls.filter((c) => match(`${c.method} ${c.path}`));
  }
  sent(filter?: { channelId?: string; via?: DSentMessage["via"] }): DSentMessage[] {
    return this.sentLog.filter((s) => (!filter?.channelId || s.channelId === filter.channelId) && (!filter?.via || s.via === filter.via));
  }
  reactions(): { channelId: string; messageId: string; emoji: string; at: number; removed?: boolean }[] {
    return [...this.world.reactions];
  }
  commands(guildId?: string): StoredCommand[] {
    return guildId ? (this.world.guildCommands.get(guildId) ?? []) : [...this.world.globalCommands];
  }
  /** State of an interaction: responseType (4, 5, ...), original message id, follow-ups. */
  interaction(id: string): { responseType?: number; originalId?: string; followups: string[] } | undefined {
    return this.world.interactions.get(id);
  }

  waitFor<T>(predicate: () => T | undefined | null | false, timeoutMs = 3000): Promise<T> {
    return this.signal.waitFor(predicate, timeoutMs, () => {
      const rest = this.calls
        .slice(-6)
        .map((c) => `${c.method} ${c.path}->${c.status ?? "?"}`)
        .join(", ");
      const gw = this.sessions()
        .map((s) => `shard ${s.shardId}/${s.shardCount} seq ${s.seq} ${s.connected ? "up" : "down"}${s.ended ? " ended" : ""}`)
        .join("; ");
      return `REST: ${rest || "none"}. Sessions: ${gw || "none"}.`;
    });
  }
  waitForRest(route: string | RegExp, pred: (c: DRestCall) => boolean = () => true, timeoutMs = 3000): Promise<DRestCall> {
    return this.waitFor(() => this.restCalls(route).find((c) => c.status !== undefined && pred(c)), timeoutMs);
  }

  // ------------------------------------------------------------ HTTP

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    if (req.method === "GET" && this.cdn.serve(req, res, url)) {
      this.signal.notify();
      return;
    }
    const raw = await readBody(req);
    const method = (req.method ?? "GET").toUpperCase();
    if (!url.pathname.startsWith("/api/v10/")) return sendJson(res, 404, { message: "404: Not Found", code: 0 });
    const path = url.pathname
      .slice("/api/v10".length)
      .split("/")
      .map((seg) => decodeURIComponent(seg))
      .join("/");
    let parsed;
    try {
      parsed = await parseBody(req, raw);
    } catch (err) {
      return sendJson(res, 400, { message: err instanceof BodyParseError ? "400: Bad Request" : String(err), code: 50109 });
    }
    const call: DRestCall = {
      method,
      path,
      query: Object.fromEntries(url.searchParams),
      body: parsed.params.payload_json !== undefined ? jsonParam(parsed.params.payload_json) : (parsed.params._body ?? parsed.params),
      files: parsed.files.map((f) => ({ field: f.field, name: f.name, size: f.size })),
      at: Date.now(),
    };
    if (req.headers.authorization) call.auth = req.headers.authorization;
    this.calls.push(call);
    const answer = (status: number, body: unknown, headers?: Record<string, string>): void => {
      call.status = status;
      call.response = body;
      sendJson(res, status, body, headers);
      this.signal.notify();
    };
    const fault = this.faults.take(`${method} ${path}`);
    if (fault?.kind === "ratelimit") {
      const ra = fault.retryAfter;
      const headers: Record<string, string> = { "retry-after": String(ra), "x-ratelimit-scope": fault.scope };
      if (fault.global) headers["x-ratelimit-global"] = "true";
      else
        Object.assign(headers, {
          "x-ratelimit-limit": "5",
          "x-ratelimit-remaining": "0",
          "x-ratelimit-reset": (Date.now() / 1000 + ra).toFixed(3),
          "x-ratelimit-reset-after": ra.toFixed(3),
          "x-ratelimit-bucket": fault.bucket,
        });
      return answer(429, { message: "You are being rate limited.", retry_after: ra, global: fault.global }, headers);
    }
    if (fault?.kind === "error") return answer(fault.status, { message: fault.message, code: fault.code });
    try {
      const [status, body] = this.rest.handle({
        method,
        path,
        query: url.searchParams,
        body: parsed.params,
        files: parsed.files,
        ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
      });
      answer(status, body);
    } catch (err) {
      if (err instanceof DApiError) return answer(err.status, err.body());
      answer(500, { message: `500: Internal Server Error (${String(err)})`, code: 0 });
    }
  }
}

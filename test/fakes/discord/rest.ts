/**
 * REST routes of the Discord fake (below /api/v10). Handlers return the JSON
 * body (or null for 204) and throw DApiError with Discord's error codes.
 */
import type { UploadedFile } from "../shared.js";
import type { DiscordGateway } from "./gateway.js";
import { ChannelType, DApiError, Intents, formError, type DChannel, type DMessage, type DSentMessage } from "./types.js";
import { snowflake, type DiscordWorld, type InteractionState, type StoredCommand } from "./world.js";

export interface RestRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: Record<string, unknown>;
  files: UploadedFile[];
  auth?: string;
}

export interface RestDeps {
  world: DiscordWorld;
  gateway: DiscordGateway;
  sent: DSentMessage[];
  applicationId: string;
  applicationFlags: number;
  token?: string;
  gatewayInfo: () => Record<string, unknown>;
  echoBotMessages: boolean;
  interactionAckDeadlineMs: number;
  changed: () => void;
}

type Handler = (req: RestRequest, params: string[]) => unknown;

const MAX_CONTENT = 2000;
const LOADING = 1 << 7;
const EPHEMERAL = 1 << 6;
const unknownChannel = (): DApiError => new DApiError(404, 10003, "Unknown Channel");
const unknownMessage = (): DApiError => new DApiError(404, 10008, "Unknown Message");
const unknownInteraction = (): DApiError => new DApiError(404, 10062, "Unknown interaction");
const unknownWebhook = (): DApiError => new DApiError(404, 10015, "Unknown Webhook");

/** How long Discord remembers a message nonce for enforce_nonce ("the past few minutes"). */
const NONCE_WINDOW_MS = 5 * 60_000;

export class DiscordRest {
  private routes: { method: string; re: RegExp; auth: boolean; fn: Handler }[] = [];
  /** Bot messages created with enforce_nonce, by channel + nonce. */
  private readonly nonces = new Map<string, { msg: DMessage; at: number }>();

  constructor(private readonly d: RestDeps) {
    const r = (method: string, pattern: string, fn: Handler, auth = true): void => {
      const re = new RegExp(`^${pattern.replace(/:[a-zA-Z]+/g, "([^/]+)")}$`);
      this.routes.push({ method, re, auth, fn });
    };
    const w = d.world;
    r("GET", "/gateway", () => ({ url: d.gatewayInfo().url as string }), false);
    r("GET", "/gateway/bot", () => d.gatewayInfo());
    r("GET", "/users/@me", () => w.bot);
    r("GET", "/users/:id", (_q, [id]) => w.users.get(id!) ?? fail(404, 10013, "Unknown User"));
    r("POST", "/users/@me/channels", (q) => {
      const uid = String(q.body.recipient_id ?? "");
      const user = w.users.get(uid) ?? { id: uid, username: `user${uid.slice(-4)}`, discriminator: "0", global_name: null, avatar: null };
      return w.dmChannel(user);
    });
    r("GET", "/applications/@me", () => ({
      id: d.applicationId,
      name: w.bot.username,
      flags: d.applicationFlags,
      bot_public: true,
      bot: w.bot,
      description: "",
    }));
    r("DELETE", "/users/@me/guilds/:id", (_q, [id]) => this.leaveGuild(id!));
    r("GET", "/channels/:id", (_q, [id]) => this.channel(id!));
    r("POST", "/channels/:id/messages", (q, [id]) => this.createMessage(this.channel(id!), q, "channel"));
    r("GET", "/channels/:id/messages/:mid", (_q, [id, mid]) => w.getMessage(id!, mid!) ?? fail(404, 10008, "Unknown Message"));
    r("PATCH", "/channels/:id/messages/:mid", (q, [id, mid]) => this.editMessage(id!, mid!, q));
    r("DELETE", "/channels/:id/messages/:mid", (_q, [id, mid]) => this.deleteMessage(id!, mid!));
    r("POST", "/channels/:id/typing", (_q, [id]) => (this.channel(id!), null));
    r("PUT", "/channels/:id/messages/:mid/reactions/:emoji/@me", (_q, [id, mid, emoji]) => this.react(id!, mid!, emoji!, false));
    r("DELETE", "/channels/:id/messages/:mid/reactions/:emoji/@me", (_q, [id, mid, emoji]) => this.react(id!, mid!, emoji!, true));
    r("POST", "/interactions/:id/:token/callback", (q, [id, token]) => this.callback(id!, token!, q), false);
    r("GET", "/webhooks/:app/:token/messages/:mid", (_q, [app, token, mid]) => this.webhookMessage(app!, token!, mid!), false);
    r("PATCH", "/webhooks/:app/:token/messages/:mid", (q, [app, token, mid]) => this.editWebhookMessage(app!, token!, mid!, q), false);
    r(
      "DELETE",
      "/webhooks/:app/:token/messages/:mid",
      (_q, [app, token, mid]) => {
        const m = this.webhookMessage(app!, token!, mid!);
        return this.deleteMessage(m.channel_id, m.id);
      },
      false,
    );
    r("POST", "/webhooks/:app/:token", (q, [app, token]) => this.followup(app!, token!, q), false);
    r("GET", "/applications/:app/commands", (_q, [app]) => this.commands(app!));
    r("PUT", "/applications/:app/commands", (q, [app]) => this.putCommands(app!, undefined, q));
    r("POST", "/applications/:app/commands", (q, [app]) => this.postCommand(app!, undefined, q));
    r("GET", "/applications/:app/guilds/:gid/commands", (_q, [app, gid]) => this.commands(app!, gid));
    r("PUT", "/applications/:app/guilds/:gid/commands", (q, [app, gid]) => this.putCommands(app!, gid, q));
    r("POST", "/applications/:app/guilds/:gid/commands", (q, [app, gid]) => this.postCommand(app!, gid, q));
  }

  /** Runs a request; returns [status, body]. */
  handle(req: RestRequest): [number, unknown] {
    for (const route of this.routes) {
      if (route.method !== req.method) continue;
      const m = route.re.exec(req.path);
      if (!m) continue;
      if (route.auth && this.d.token !== undefined && req.auth !== `Bot ${this.d.token}`) throw new DApiError(401, 0, "401: Unauthorized");
      const body = route.fn(req, m.slice(1));
      return body === null ? [204, null] : [200, body];
    }
    throw new DApiError(404, 0, "404: Not Found");
  }

  /** Forgets remembered nonces (FakeDiscord.reset). */
  reset(): void {
    this.nonces.clear();
  }

  private channel(id: string): DChannel {
    const ch = this.d.world.channels.get(id);
    if (!ch) throw unknownChannel();
    if (typeof ch.guild_id === "string" && this.d.world.left.has(ch.guild_id)) throw new DApiError(403, 50001, "Missing Access");
    return ch;
  }

  /** Leave Guild: 204, then GUILD_DELETE (without `unavailable`: the bot was removed) to the bot's sessions. */
  private leaveGuild(id: string): null {
    const w = this.d.world;
    if (!w.guilds.has(id) || w.left.has(id)) throw new DApiError(404, 10004, "Unknown Guild");
    w.left.add(id);
    this.d.gateway.route("GUILD_DELETE", { id }, { guildId: id });
    this.d.changed();
    return null;
  }

  // ---------------------------------------------------------------- messages

  private payload(req: RestRequest): Record<string, unknown> {
    const pj = req.body.payload_json;
    if (typeof pj !== "string") return req.body;
    try {
      return JSON.parse(pj) as Record<string, unknown>;
    } catch {
      throw formError(["payload_json"], "BASE_TYPE_BAD_JSON", "Invalid JSON.");
    }
  }

  private buildBotMessage(channel: DChannel, req: RestRequest, checkReference: boolean): DMessage {
    const w = this.d.world;
    const p = this.payload(req);
    const content = typeof p.content === "string" ? p.content : "";
    const embeds = Array.isArray(p.embeds) ? p.embeds : [];
    const hasOther =
      req.files.length > 0 ||
      (Array.isArray(p.sticker_ids) && p.sticker_ids.length > 0) ||
      !!p.poll ||
      (Array.isArray(p.components) && p.components.length > 0);
    if (!content && embeds.length === 0 && !hasOther) throw new DApiError(400, 50006, "Cannot send an empty message");
    if (content.length > MAX_CONTENT) throw formError(["content"], "BASE_TYPE_MAX_LENGTH", `Must be ${MAX_CONTENT} or fewer in length.`);
    let replyTo: DMessage | undefined;
    const ref = p.message_reference as { message_id?: string; channel_id?: string; fail_if_not_exists?: boolean } | undefined;
    if (checkReference && ref?.message_id) {
      replyTo = w.getMessage(ref.channel_id ?? channel.id, ref.message_id);
      if (!replyTo && ref.fail_if_not_exists !== false) throw formError(["message_reference"], "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message");
    }
    const msg = w.message({ channel, author: w.bot, content, ...(replyTo ? { replyTo } : {}) });
    msg.embeds = embeds;
    if (Array.isArray(p.components)) msg.components = p.components;
    if (typeof p.flags === "number") msg.flags = p.flags;
    if (p.nonce !== undefined) msg.nonce = p.nonce;
    msg.attachments = req.files.map((f) => ({
      id: snowflake(),
      filename: f.name,
      size: f.size,
      content_type: f.type || "application/octet-stream",
      url: `https://cdn.fake.invalid/${f.name}`,
      proxy_url: `https://media.fake.invalid/${f.name}`,
    }));
    return msg;
  }

  private record(msg: DMessage, via: DSentMessage["via"], files: UploadedFile[], interactionId?: string): DSentMessage {
    const rec: DSentMessage = {
      id: msg.id,
      channelId: msg.channel_id,
      content: msg.content,
      embeds: (msg.embeds as unknown[]) ?? [],
      via,
      ephemeral: (msg.flags & EPHEMERAL) !== 0,
      loading: (msg.flags & LOADING) !== 0,
      history: [msg.content],
      files: files.map((f) => f.name),
      message: msg,
      at: Date.now(),
    };
    if (msg.guild_id) rec.guildId = msg.guild_id;
    if (msg.message_reference?.message_id) rec.replyTo = msg.message_reference.message_id;
    if (interactionId) rec.interactionId = interactionId;
    this.d.sent.push(rec);
    this.d.changed();
    return rec;
  }

  /** MESSAGE_CREATE / MESSAGE_UPDATE for the bot's own messages, like Discord sends them. */
  private echo(t: "MESSAGE_CREATE" | "MESSAGE_UPDATE", msg: DMessage): void {
    if (!this.d.echoBotMessages || (msg.flags & EPHEMERAL) !== 0) return;
    const ch = this.d.world.channels.get(msg.channel_id);
    const ev: Record<string, unknown> = { ...msg, channel_type: ch?.type ?? ChannelType.GuildText };
    if (msg.guild_id) ev.member = this.d.world.member(msg.author, false);
    this.d.gateway.route(t, ev, msg.guild_id ? { guildId: msg.guild_id, intent: Intents.GuildMessages } : { intent: Intents.DirectMessages });
  }

  /**
   * With `enforce_nonce: true` and a nonce, Discord checks the nonce for
   * uniqueness over the past few minutes: a second create with the same
   * nonce by the same author returns the first message and creates nothing.
   */
  private createMessage(channel: DChannel, req: RestRequest, via: "channel"): DMessage {
    const p = this.payload(req);
    const nonceKey = p.enforce_nonce === true && (typeof p.nonce === "string" || typeof p.nonce === "number") ? `${channel.id}:${String(p.nonce)}` : undefined;
    const now = Date.now();
    const earlier = nonceKey ? this.nonces.get(nonceKey) : undefined;
    if (earlier && now - earlier.at < NONCE_WINDOW_MS) return earlier.msg;
    const msg = this.d.world.storeMessage(this.buildBotMessage(channel, req, true));
    if (nonceKey) this.nonces.set(nonceKey, { msg, at: now });
    this.record(msg, via, req.files);
    this.echo("MESSAGE_CREATE", msg);
    return msg;
  }

  private applyEdit(msg: DMessage, req: RestRequest): DMessage {
    const p = this.payload(req);
    if (typeof p.content === "string") {
      if (p.content.length > MAX_CONTENT) throw formError(["content"], "BASE_TYPE_MAX_LENGTH", `Must be ${MAX_CONTENT} or fewer in length.`);
      msg.content = p.content;
    }
    if (Array.isArray(p.embeds)) msg.embeds = p.embeds;
    if (Array.isArray(p.components)) msg.components = p.components;
    msg.flags &= ~LOADING;
    msg.edited_timestamp = new Date().toISOString();
    const rec = this.d.sent.find((s) => s.id === msg.id);
    if (rec) {
      rec.content = msg.content;
      rec.embeds = (msg.embeds as unknown[]) ?? [];
      rec.loading = false;
      rec.history.push(msg.content);
    }
    this.d.changed();
    this.echo("MESSAGE_UPDATE", msg);
    return msg;
  }

  private editMessage(channelId: string, id: string, req: RestRequest): DMessage {
    this.channel(channelId);
    const msg = this.d.world.getMessage(channelId, id);
    if (!msg) throw unknownMessage();
    if (msg.author.id !== this.d.world.bot.id) throw new DApiError(403, 50005, "Cannot edit a message authored by another user");
    return this.applyEdit(msg, req);
  }

  private deleteMessage(channelId: string, id: string): null {
    const msg = this.d.world.getMessage(channelId, id);
    if (!msg) throw unknownMessage();
    this.d.world.messages.delete(`${channelId}:${id}`);
    const ev: Record<string, unknown> = { id, channel_id: channelId };
    if (msg.guild_id) ev.guild_id = msg.guild_id;
    this.d.gateway.route("MESSAGE_DELETE", ev, msg.guild_id ? { guildId: msg.guild_id, intent: Intents.GuildMessages } : { intent: Intents.DirectMessages });
    this.d.changed();
    return null;
  }

  private react(channelId: string, id: string, emoji: string, removed: boolean): null {
    this.channel(channelId);
    if (!this.d.world.getMessage(channelId, id)) throw unknownMessage();
    this.d.world.reactions.push({ channelId, messageId: id, emoji, at: Date.now(), ...(removed ? { removed } : {}) });
    this.d.changed();
    return null;
  }

  // ---------------------------------------------------------------- interactions

  private interactionByToken(app: string, token: string): InteractionState {
    if (app !== this.d.applicationId) throw unknownWebhook();
    const it = [...this.d.world.interactions.values()].find((i) => i.token === token);
    if (!it || Date.now() - it.createdAt > 15 * 60_000) throw unknownWebhook();
    return it;
  }

  private callback(id: string, token: string, req: RestRequest): unknown {
    const it = this.d.world.interactions.get(id);
    if (!it || it.token !== token) throw unknownInteraction();
    if (it.responseType !== undefined) throw new DApiError(400, 40060, "Interaction has already been acknowledged.");
    if (Date.now() - it.createdAt > this.d.interactionAckDeadlineMs) throw unknownInteraction();
    const type = Number(this.payload(req).type);
    const data = (this.payload(req).data ?? {}) as Record<string, unknown>;
    if (![4, 5, 6, 7, 8, 9, 10, 12].includes(type)) throw formError(["type"], "BASE_TYPE_CHOICES", "Value must be one of {4, 5, 6, 7, 8, 9, 10, 12}.");
    it.responseType = type;
    let message: DMessage | undefined;
    if (type === 4 || type === 5) {
      const channel = this.channel(it.channelId);
      const sub: RestRequest = { ...req, body: type === 5 ? { content: "\u200b" } : data, files: type === 5 ? [] : req.files };
      message = this.buildBotMessage(channel, sub, false);
      if (type === 5) message.content = "";
      message.type = 20;
      message.flags = (Number(data.flags ?? 0) & EPHEMERAL) | (type === 5 ? LOADING : 0);
      message.webhook_id = this.d.applicationId;
      message.application_id = this.d.applicationId;
      message.interaction_metadata = {
        id: it.id,
        type: 2,
        user: (it.payload.member as { user?: unknown } | undefined)?.user ?? it.payload.user,
        authorizing_integration_owners: it.payload.authorizing_integration_owners,
        name: (it.payload.data as { name?: string }).name,
      };
      this.d.world.storeMessage(message);
      it.originalId = message.id;
      this.record(message, "interaction", sub.files, it.id);
      this.echo("MESSAGE_CREATE", message);
    } else this.d.changed();
    if (req.query.get("with_response") !== "true") return null;
    return {
      interaction: {
        id: it.id,
        type: it.payload.type,
        activity_instance_id: null,
        response_message_id: message?.id ?? null,
        response_message_loading: type === 5,
        response_message_ephemeral: message ? (message.flags & EPHEMERAL) !== 0 : false,
      },
      resource: message ? { type, message } : { type },
    };
  }

  private webhookMessage(app: string, token: string, mid: string): DMessage {
    const it = this.interactionByToken(app, token);
    const id = mid === "@original" ? it.originalId : it.followups.find((f) => f === mid);
    const msg = id ? this.d.world.getMessage(it.channelId, id) : undefined;
    if (!msg) throw unknownMessage();
    return msg;
  }

  private editWebhookMessage(app: string, token: string, mid: string, req: RestRequest): DMessage {
    return this.applyEdit(this.webhookMessage(app, token, mid), req);
  }

  private followup(app: string, token: string, req: RestRequest): DMessage {
    const it = this.interactionByToken(app, token);
    if (it.responseType === undefined) throw unknownWebhook();
    const msg = this.buildBotMessage(this.channel(it.channelId), req, false);
    msg.webhook_id = this.d.applicationId;
    msg.application_id = this.d.applicationId;
    this.d.world.storeMessage(msg);
    it.followups.push(msg.id);
    this.record(msg, "followup", req.files, it.id);
    this.echo("MESSAGE_CREATE", msg);
    return msg;
  }

  // ---------------------------------------------------------------- application commands

  private checkApp(app: string): void {
    if (app !== this.d.applicationId) throw new DApiError(404, 10002, "Unknown Application");
  }

  private commands(app: string, guildId?: string): StoredCommand[] {
    this.checkApp(app);
    return guildId ? (this.d.world.guildCommands.get(guildId) ?? []) : this.d.world.globalCommands;
  }

  private normalizeCommand(raw: Record<string, unknown>, index: number | undefined, existing: StoredCommand[], guildId?: string): StoredCommand {
    const type = Number(raw.type ?? 1);
    const name = String(raw.name ?? "");
    const at = (field: string): string[] => (index === undefined ? [field] : [String(index), field]);
    if (type === 1 && !/^[-_\p{Ll}\p{Lo}\p{N}]{1,32}$/u.test(name)) throw formError(at("name"), "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid");
    if (type !== 1 && (name.length < 1 || name.length > 32)) throw formError(at("name"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length.");
    const description = String(raw.description ?? "");
    if (type === 1 && (description.length < 1 || description.length > 100))
      throw formError(at("description"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
    const prev = existing.find((c) => c.name === name && c.type === type);
    const cmd: StoredCommand = {
      default_member_permissions: null,
      nsfw: false,
      integration_types: [0],
      contexts: null,
      options: [],
      ...raw,
      id: prev?.id ?? snowflake(),
      application_id: this.d.applicationId,
      version: snowflake(),
      name,
      type,
      description,
    };
    if (guildId) cmd.guild_id = guildId;
    return cmd;
  }

  private putCommands(app: string, guildId: string | undefined, req: RestRequest): StoredCommand[] {
    this.checkApp(app);
    const list = req.body._body;
    if (!Array.isArray(list)) throw formError([], "BASE_TYPE_ARRAY", "Must be an array.");
    const existing = this.commands(app, guildId);
    const next = list.map((c, i) => this.normalizeCommand(c as Record<string, unknown>, i, existing, guildId));
    if (guildId) this.d.world.guildCommands.set(guildId, next);
    else this.d.world.globalCommands.splice(0, this.d.world.globalCommands.length, ...next);
    this.d.changed();
    return next;
  }

  private postCommand(app: string, guildId: string | undefined, req: RestRequest): StoredCommand {
    const existing = this.commands(app, guildId);
    const cmd = this.normalizeCommand(req.body, undefined, existing, guildId);
    const list = existing.filter((c) => !(c.name === cmd.name && c.type === cmd.type));
    list.push(cmd);
    if (guildId) this.d.world.guildCommands.set(guildId, list);
    else this.d.world.globalCommands.splice(0, this.d.world.globalCommands.length, ...list);
    this.d.changed();
    return cmd;
  }
}

function fail(status: number, code: number, message: string): never {
  throw new DApiError(status, code, message);
}

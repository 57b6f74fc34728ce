/**
 * The Discord adapter: a discord.js Client for the gateway (events in) and
 * its REST client for calls out (sink.ts).
 *
 * Inbound reads raw dispatches (Events.Raw) rather than discord.js's
 * MessageCreate: the raw event comes for every message, cached channel or
 * not, and normalize.ts stays a pure, fuzzable function of it. Events of one
 * channel are handed to ctx.inbound one at a time, in gateway order; after a
 * RESUME the replayed events simply go through again and the gateway drops
 * the ones it already recorded (same eventId).
 *
 * discord.js's REST runs with retries: 0: the gateway's scheduler is the one
 * retry mechanism for failures, while 429s stay with the REST queue (see
 * errors.ts).
 */
import type { EventEmitter } from "node:events";
import { discordFiles } from "./files.js";
import type { FileSource } from "../types.js";
import { DISCORD_LIMITS } from "./limits.js";
import { discordFormat } from "./format.js";
import { Events, Status, type Client } from "discord.js";
import { registerSecret, type Logger } from "../../src/log.js";
import { AdapterError, AdapterSetupError, type Adapter, type AdapterContext, type AdapterHealth, type InboundEnvelope } from "../types.js";
import { deferInteraction, fromOutside, normalizeInteraction, syncCommands } from "./commands.js";
import { isSnowflake, PLATFORM } from "./ids.js";
import { ChannelQueues } from "./channel-queues.js";
import { channelInfo } from "./channel-info.js";
import { guildChatsBeside } from "./guild-chats.js";
import { normalizeChange, normalizeMessage, type ChannelInfo, type DiscordBotIdentity } from "./normalize.js";
import { createDiscordSink, type DiscordSink } from "./sink.js";
import { createDiscordClient, destroyDiscordClient } from "./client.js";
import type { DiscordAdapterOptions } from "./options.js";
import { recordInbound } from "./record-inbound.js";
import { BotBrake } from "./bot-brake.js";
import { discordCardParts, editDiscordCard, handleDiscordPress, isApprovalPress, sendDiscordCard, sendDiscordCardPart } from "./approval-card.js";

type State = "idle" | "starting" | "running" | "stopped";
type Raw = { t?: unknown; d?: unknown };

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

export class DiscordAdapter implements Adapter {
  readonly platform = PLATFORM;
  readonly limits = DISCORD_LIMITS;
  // A DM needs a channel opened first (users/@me/channels).
  readonly facts = { dmByUserId: false };
  readonly sink: DiscordSink;
  /** Markdown rendered for Discord, then split at its limit (format.ts). */
  readonly format = discordFormat;
  /** Attachments on Discord's CDN (files.ts). */
  readonly files: FileSource;

  private client: Client | undefined;
  private state: State = "idle";
  private id = "";
  private username: string | undefined;
  private applicationId = "";
  private log: Logger | undefined;
  private ctx: AdapterContext | undefined;
  /** Each channel's events waiting to be handed to the gateway, and the drain that works them off. */
  private readonly queues = new ChannelQueues(() => ({ ctx: this.ctx, log: this.log }));
  private readonly deferrals = new Map<string, Promise<unknown>>();
  private readonly mentionRoles: string[];
  /** With allowBots: at most a few other bots' messages in a row per channel are answered (bot-brake.ts). */
  private readonly botBrake = new BotBrake((channelId) =>
    this.log?.warn(
      { channelId },
      "discord: other bots' messages were answered several times in a row here with no person speaking; further ones are ignored until a person posts (a bot-to-bot loop)",
    ),
  );

  constructor(private readonly opts: DiscordAdapterOptions) {
    const token = opts.token?.trim() ?? "";
    if (!token)
      throw new AdapterSetupError("Config", "DiscordAdapter needs a bot token: set DISCORD_BOT_TOKEN to the token from the Discord Developer Portal (Bot tab)");
    registerSecret(token);
    if (opts.apiUrl?.endsWith("/")) throw new AdapterSetupError("Config", "DISCORD_API_URL must not end with '/': remove the trailing slash");
    this.files = discordFiles(opts.apiUrl);
    if (opts.shard && !(Number.isInteger(opts.shard.id) && Number.isInteger(opts.shard.count) && opts.shard.id >= 0 && opts.shard.id < opts.shard.count))
      throw new AdapterSetupError("Config", `Discord shard ${opts.shard.id}/${opts.shard.count} is invalid: DISCORD_SHARD_ID must be 0..DISCORD_SHARD_COUNT-1`);
    this.mentionRoles = (opts.mentionRoles ?? []).filter((r) => isSnowflake(r));
    this.sink = createDiscordSink({
      rest: () => {
        if (!this.client || this.state === "stopped")
          throw new AdapterError("discord", "Unavailable", "the Discord adapter is not running: call start() first");
        return this.client.rest;
      },
      deferral: (token) => this.deferrals.get(token),
    });
    const rest = () => {
      if (!this.client || this.state === "stopped") throw new AdapterError("discord", "Unavailable", "the Discord adapter is not running: call start() first");
      return this.client.rest;
    };
    this.sink.sendCard = (to, card) => sendDiscordCard(rest(), to, card);
    this.sink.cardParts = discordCardParts;
    this.sink.sendCardPart = (to, card, i) => sendDiscordCardPart(rest(), to, card, i);
    this.sink.editCard = (to, id, card) => editDiscordCard(rest(), to, id, card);
  }

  get botId(): string {
    return this.id;
  }

  get botUsername(): string | undefined {
    return this.username;
  }

  private identity(): DiscordBotIdentity {
    return { id: this.id, allowBots: this.opts.allowBots ?? false, mentionRoles: this.mentionRoles };
  }

  async start(ctx: AdapterContext): Promise<void> {
    if (this.state === "starting" || this.state === "running")
      throw new AdapterSetupError("AlreadyStarted", "DiscordAdapter.start() called while already started: stop() it first");
    this.state = "starting";
    this.ctx = ctx;
    const log = (this.opts.log ?? ctx.log).child({ platform: PLATFORM });
    this.log = log;
    const client = createDiscordClient(this.opts);
    this.client = client;
    (client as unknown as EventEmitter).on(Events.Raw, (packet: Raw) => this.onDispatch(packet));
    client.on(Events.Error, (err) => log.warn({ error: err.name }, "discord client error"));
    client.on(Events.ShardDisconnect, (ev, shardId) =>
      log.error({ shardId, code: ev.code }, "discord shard disconnected for good (check the token, intents and shard settings)"),
    );
    client.on(Events.ShardReconnecting, (shardId) => log.info({ shardId }, "discord shard reconnecting"));
    client.on(Events.ShardResume, (shardId, replayed) => log.info({ shardId, replayed }, "discord shard resumed"));
    try {
      const ready = new Promise<void>((resolve, reject) => {
        client.once(Events.ClientReady, () => resolve());
        client.once(Events.ShardDisconnect, (ev) =>
          reject(new AdapterError("discord", "Unavailable", `the Discord gateway closed the connection (${ev.code}) during login`)),
        );
      });
      await client.login(this.opts.token.trim());
      await ready;
      if (this.state !== "starting") return;
      this.id = client.user!.id;
      this.username = client.user!.username;
      this.applicationId = client.application?.id ?? this.id;
      this.log = log.child({ botId: this.id });
      await syncCommands(client.rest, ctx, { botId: this.id, applicationId: this.applicationId }, this.log);
      if (this.state !== "starting") return;
      this.state = "running";
      this.log.info({ username: this.username, shard: this.opts.shard }, "discord adapter started");
    } catch (err) {
      if (this.state === "starting") {
        this.state = "idle";
        this.client = undefined;
        await destroyDiscordClient(client, 3000, this.log);
      }
      if (err instanceof AdapterError) throw err;
      const e = err as { name?: string; code?: unknown; status?: unknown };
      const hint = e.code === "TokenInvalid" || e.status === 401 ? ": Discord refused the token; check DISCORD_BOT_TOKEN" : "";
      throw new AdapterError(
        "discord",
        "Unavailable",
        `the Discord adapter could not log in (${e.name ?? "error"}${e.code ? ` ${String(e.code)}` : ""})${hint}`,
        undefined,
        { cause: err },
      );
    }
  }

  /** Called synchronously for every gateway dispatch, in order. */
  private onDispatch(packet: Raw): void {
    if (this.state === "stopped" || this.state === "idle") return;
    const d = packet.d as Record<string, unknown> | null | undefined;
    if (!d || typeof d !== "object") return;
    if (packet.t === "MESSAGE_CREATE") {
      this.queues.enqueue(String(d.channel_id), () => this.handleMessage(d));
    } else if (packet.t === "MESSAGE_UPDATE" || packet.t === "MESSAGE_DELETE") {
      // Behind the channel's queue: a change lands after the message it changes.
      this.queues.enqueue(String(d.channel_id), () => this.handleChange(packet.t === "MESSAGE_UPDATE" ? "edit" : "delete", d));
    } else if (packet.t === "INTERACTION_CREATE" && fromOutside(d)) {
      // A user install's interaction from a place the bot is not in (commands.ts): not acknowledged, not answered.
      this.ctx?.dropped?.("user_install");
      this.log?.info({ id: typeof d.id === "string" ? d.id : undefined }, "discord: an interaction from a place the bot is not in (a user install) ignored");
    } else if (packet.t === "INTERACTION_CREATE" && isApprovalPress(d) && this.ctx && this.log) {
      // Not behind the channel's queue either: acknowledged at once, then decided.
      void handleDiscordPress(this.client!.rest, this.applicationId, d, this.ctx, this.log);
    } else if (packet.t === "INTERACTION_CREATE" && d.type === 2 && typeof d.token === "string" && isSnowflake(d.id)) {
      // Deferred here, not behind the channel's queue: the 3 s window runs from now.
      const token = d.token;
      const deferral = deferInteraction(this.client!.rest, { id: d.id, token }).catch((err: unknown) => {
        const e = err as { status?: unknown; code?: unknown };
        this.log?.warn({ status: e.status, code: e.code }, "discord: could not defer an interaction; its reply goes to the channel instead");
      });
      this.deferrals.set(token, deferral);
      setTimeout(() => this.deferrals.delete(token), 15 * 60_000).unref();
      this.queues.enqueue(String(d.channel_id), () => this.handleInteraction(d));
    }
  }

  private async handleChange(kind: "edit" | "delete", d: Record<string, unknown>): Promise<void> {
    if (!this.id) return;
    const info = await this.channelInfo(d.channel_id, d.guild_id !== undefined);
    const env = normalizeChange(kind, d, this.identity(), info);
    if (!env) return;
    // Another bot's edit is a message to answer as well: braked the same way (a delete names no author and passes).
    if (kind === "edit") this.botBrake.check(String(d.channel_id), d, env);
    await this.deliver(env);
  }

  private async handleMessage(d: Record<string, unknown>): Promise<void> {
    if (!this.id) return;
    const info = await this.channelInfo(d.channel_id, d.guild_id !== undefined);
    const env = normalizeMessage(d, this.identity(), info, (err) => this.normalizeFailed("message", d, err));
    if (!env) return;
    this.botBrake.check(String(d.channel_id), d, env);
    await this.deliver(env);
  }

  private async handleInteraction(d: Record<string, unknown>): Promise<void> {
    if (!this.id) return;
    const info = await this.channelInfo(d.channel_id, d.guild_id !== undefined);
    const i = normalizeInteraction(d, this.identity(), info, (err) => this.normalizeFailed("interaction", d, err));
    if (i) await this.deliver(i.env);
  }

  private normalizeFailed(what: string, d: Record<string, unknown>, err: unknown): void {
    this.ctx?.reportError?.(`discord-normalize-${what}`, err);
    this.log?.error(
      { id: typeof d.id === "string" ? d.id : undefined, err: err instanceof Error ? err.name : typeof err },
      `discord: a ${what} could not be normalized; not answered`,
    );
  }

  /** A leave is of the channel's whole server (sink.ts): the server's other channels and threads, from the gateway cache (guild-chats.ts). */
  async leaveTakesAlso(chatId: string): Promise<string[] | undefined> {
    return guildChatsBeside(this.client, chatId);
  }

  private channelInfo(id: unknown, inGuild: boolean): Promise<ChannelInfo | undefined> {
    return channelInfo(this.client, id, inGuild, this.ctx, this.log);
  }

  /** Hands one envelope to the gateway, retrying while the store is briefly unavailable (record-inbound.ts). */
  private deliver(env: InboundEnvelope): Promise<void> {
    return recordInbound(this.ctx!, env, this.opts, () => this.state === "stopped", this.log);
  }

  async stop(): Promise<void> {
    if (this.state === "idle" || this.state === "stopped") return;
    this.state = "stopped";
    const client = this.client;
    const timeout = this.opts.stopTimeoutMs ?? 3000;
    if (client) await destroyDiscordClient(client, timeout, this.log);
    // In-flight inbound calls finish (they are being recorded); nothing new starts.
    await Promise.race([this.queues.drained(), sleep(timeout)]);
    this.queues.clear();
    this.deferrals.clear();
    this.client = undefined;
    this.log?.info("discord adapter stopped");
  }

  health(): AdapterHealth {
    switch (this.state) {
      case "idle":
        return { ready: false, detail: "not started" };
      case "starting":
        return { ready: false, detail: "starting: logging in to the gateway" };
      case "stopped":
        return { ready: false, detail: "stopped" };
      case "running": {
        const shards = [...(this.client?.ws.shards.values() ?? [])];
        const down = shards.filter((s) => s.status !== Status.Ready);
        if (shards.length === 0) return { ready: false, detail: "no gateway shard" };
        if (down.length) return { ready: false, detail: `gateway shard ${down.map((s) => s.id).join(",")} not ready (reconnecting)` };
        return { ready: true };
      }
    }
  }
}

/**
 * The Discord fake's in-memory world: snowflakes, users, guilds with channels
 * and threads, DM channels, messages, interactions and application commands.
 */
import { randomBytes } from "node:crypto";
import { ChannelType, type DChannel, type DGuild, type DMessage, type DUser } from "./types.js";

const DISCORD_EPOCH = 1_420_070_400_000n;
let seq = 0n;

/** A snowflake whose timestamp part is `ms` (default now). */
export function snowflake(ms = Date.now()): string {
  seq = (seq + 1n) & 0xfffn;
  return String(((BigInt(ms) - DISCORD_EPOCH) << 22n) | (1n << 17n) | seq);
}

/** Shard a guild's events go to: (guild_id >> 22) % shardCount. */
export function shardFor(guildId: string, shardCount: number): number {
  return Number((BigInt(guildId) >> 22n) % BigInt(shardCount));
}

/** A guild id that routes to `shardId` of `shardCount`. */
export function guildIdForShard(shardId: number, shardCount: number): string {
  let ms = Date.now();
  for (;;) {
    const id = snowflake(ms);
    if (shardFor(id, shardCount) === shardId) return id;
    ms -= 1;
  }
}

const iso = (): string => new Date().toISOString();

export interface GuildSpec {
  name?: string;
  id?: string;
  /** Put the guild on this shard: [shardId, shardCount]. */
  shard?: [number, number];
  /** Text channels by name (default ["general"]); objects may set type (e.g. 15 forum, 5 announcement). */
  channels?: (string | { name: string; type?: number; id?: string })[];
  /** Threads: name and parent channel name (default: the first text channel). */
  threads?: (string | { name: string; parent?: string; id?: string; type?: number })[];
  /** Members besides the bot. */
  members?: DUser[];
  ownerId?: string;
}

export interface GuildFixture {
  id: string;
  name: string;
  /** The GUILD_CREATE payload. */
  raw: DGuild;
  channels: Record<string, DChannel>;
  threads: Record<string, DChannel>;
}

export interface InteractionState {
  id: string;
  token: string;
  createdAt: number;
  channelId: string;
  guildId?: string;
  payload: Record<string, unknown>;
  responseType?: number;
  originalId?: string;
  followups: string[];
}

export interface StoredCommand {
  id: string;
  name: string;
  type: number;
  [key: string]: unknown;
}

export class DiscordWorld {
  readonly users = new Map<string, DUser>();
  readonly guilds = new Map<string, GuildFixture>();
  readonly channels = new Map<string, DChannel>();
  readonly messages = new Map<string, DMessage>();
  readonly interactions = new Map<string, InteractionState>();
  readonly globalCommands: StoredCommand[] = [];
  readonly guildCommands = new Map<string, StoredCommand[]>();
  readonly reactions: { channelId: string; messageId: string; emoji: string; at: number; removed?: boolean }[] = [];
  /** Guilds the bot left (DELETE /users/@me/guilds/:id): their channels answer 403 Missing Access. */
  readonly left = new Set<string>();

  constructor(readonly bot: DUser) {
    this.users.set(bot.id, bot);
  }

  reset(): void {
    this.users.clear();
    this.users.set(this.bot.id, this.bot);
    this.guilds.clear();
    this.channels.clear();
    this.messages.clear();
    this.interactions.clear();
    this.globalCommands.length = 0;
    this.guildCommands.clear();
    this.reactions.length = 0;
    this.left.clear();
  }

  user(username: string, extra: Partial<DUser> = {}): DUser {
    const u: DUser = { id: snowflake(), username, discriminator: "0", global_name: username[0]!.toUpperCase() + username.slice(1), avatar: null, ...extra };
    this.users.set(u.id, u);
    return u;
  }

  member(user: DUser, withUser = true): Record<string, unknown> {
    const m: Record<string, unknown> = {
      roles: [],
      nick: null,
      avatar: null,
      premium_since: null,
      joined_at: iso(),
      deaf: false,
      mute: false,
      flags: 0,
      pending: false,
      communication_disabled_until: null,
    };
    if (withUser) m.user = user;
    return m;
  }

  addGuild(spec: GuildSpec = {}): GuildFixture {
    const id = spec.id ?? (spec.shard ? guildIdForShard(spec.shard[0], spec.shard[1]) : snowflake());
    const name = spec.name ?? "Fake Guild";
    const channels: Record<string, DChannel> = {};
    const threads: Record<string, DChannel> = {};
    const specs = spec.channels ?? ["general"];
    specs.forEach((c, position) => {
      const s = typeof c === "string" ? { name: c } : c;
      channels[s.name] = {
        id: s.id ?? snowflake(),
        type: s.type ?? ChannelType.GuildText,
        guild_id: id,
        name: s.name,
        position,
        permission_overwrites: [],
        parent_id: null,
        nsfw: false,
        topic: null,
        last_message_id: null,
        rate_limit_per_user: 0,
        flags: 0,
      };
    });
    const firstText = Object.values(channels).find((c) => c.type === ChannelType.GuildText || c.type === ChannelType.GuildForum);
    for (const t of spec.threads ?? []) {
      const s = typeof t === "string" ? { name: t } : t;
      const parent = s.parent ? channels[s.parent] : firstText;
      if (!parent) throw new Error(`FakeDiscord: no parent channel for thread ${s.name}`);
      threads[s.name] = {
        id: s.id ?? snowflake(),
        type: s.type ?? ChannelType.PublicThread,
        guild_id: id,
        parent_id: parent.id,
        owner_id: spec.ownerId ?? this.bot.id,
        name: s.name,
        last_message_id: null,
        message_count: 0,
        member_count: 1,
        rate_limit_per_user: 0,
        flags: 0,
        total_message_sent: 0,
        thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: iso(), locked: false, create_timestamp: iso() },
      };
    }
    const members = [this.member(this.bot), ...(spec.members ?? []).map((u) => this.member(u))];
    for (const u of spec.members ?? []) this.users.set(u.id, u);
    const raw: DGuild = {
      id,
      name,
      icon: null,
      splash: null,
      discovery_splash: null,
      owner_id: spec.ownerId ?? spec.members?.[0]?.id ?? this.bot.id,
      afk_channel_id: null,
      afk_timeout: 300,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      mfa_level: 0,
      system_channel_id: null,
      system_channel_flags: 0,
      rules_channel_id: null,
      vanity_url_code: null,
      description: null,
      banner: null,
      premium_tier: 0,
      premium_subscription_count: 0,
      preferred_locale: "en-US",
      public_updates_channel_id: null,
      nsfw_level: 0,
      premium_progress_bar_enabled: false,
      features: [],
      emojis: [],
      stickers: [],
      roles: [{ id, name: "@everyone", color: 0, hoist: false, position: 0, permissions: "2248473465835073", managed: false, mentionable: false, flags: 0 }],
      joined_at: iso(),
      large: false,
      unavailable: false,
      member_count: members.length,
      voice_states: [],
      members,
      channels: Object.values(channels),
      threads: Object.values(threads),
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
    };
    const fixture: GuildFixture = { id, name, raw, channels, threads };
    this.guilds.set(id, fixture);
    for (const c of [...Object.values(channels), ...Object.values(threads)]) this.channels.set(c.id, c);
    return fixture;
  }

  /** The DM channel with `user` (created on first use). */
  dmChannel(user: DUser): DChannel {
    this.users.set(user.id, user);
    const existing = [...this.channels.values()].find((c) => c.type === ChannelType.DM && c.recipients?.[0]?.id === user.id);
    if (existing) return existing;
    const ch: DChannel = { id: snowflake(), type: ChannelType.DM, last_message_id: null, flags: 0, recipients: [user] };
    this.channels.set(ch.id, ch);
    return ch;
  }

  storeMessage(m: DMessage): DMessage {
    this.messages.set(`${m.channel_id}:${m.id}`, m);
    const ch = this.channels.get(m.channel_id);
    if (ch) ch.last_message_id = m.id;
    return m;
  }

  getMessage(channelId: string, id: string): DMessage | undefined {
    return this.messages.get(`${channelId}:${id}`);
  }

  /** Users mentioned as <@id> / <@!id> in content. */
  mentionedUsers(content: string): DUser[] {
    const out: DUser[] = [];
    for (const m of content.matchAll(/<@!?(\d+)>/g)) {
      const u = this.users.get(m[1]!);
      if (u && !out.some((x) => x.id === u.id)) out.push(u);
    }
    return out;
  }

  /** Builds a message object with Discord's fields. */
  message(o: { channel: DChannel; author: DUser; content: string; replyTo?: DMessage; mentions?: DUser[]; extra?: Record<string, unknown> }): DMessage {
    const mentions = o.mentions ?? this.mentionedUsers(o.content);
    const m: DMessage = {
      id: snowflake(),
      channel_id: o.channel.id,
      author: o.author,
      content: o.content,
      timestamp: iso(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: /@(everyone|here)\b/.test(o.content),
      mentions,
      mention_roles: [...o.content.matchAll(/<@&(\d+)>/g)].map((x) => x[1]!),
      attachments: [],
      embeds: [],
      components: [],
      pinned: false,
      type: o.replyTo ? 19 : 0,
      flags: 0,
    };
    if (o.channel.guild_id) m.guild_id = o.channel.guild_id;
    if (o.replyTo) {
      m.message_reference = { type: 0, message_id: o.replyTo.id, channel_id: o.replyTo.channel_id };
      if (o.replyTo.guild_id) m.message_reference.guild_id = o.replyTo.guild_id;
      const { referenced_message: _r, ...ref } = o.replyTo;
      m.referenced_message = ref as DMessage;
    }
    Object.assign(m, o.extra);
    return m;
  }

  newToken(): string {
    return `aW50ZXJhY3Rpb246${randomBytes(24).toString("base64url")}`;
  }
}

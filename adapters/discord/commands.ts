/**
 * Native application commands (/new, /status, /stop, /help, ...).
 *
 * Registration is one bulk overwrite (PUT /applications/:app/commands), made
 * only when the list changed: its hash is kept in ctx.kv, because bots that
 * re-register on every start get rate-limited when many restart together.
 * A failure is logged and never stops the adapter: typed commands still work.
 *
 * An INTERACTION_CREATE becomes an ordinary envelope whose text is the
 * command line ("/new my title"), so the runtime's command interceptor
 * handles slash and typed commands alike. Discord wants an answer within
 * 3 s; the adapter defers (type 5) at once and the reply later fills the
 * deferred response (sink.ts).
 */
import { createHash } from "node:crypto";
import type { REST } from "discord.js";
import type { Logger } from "../../src/log.js";
import type { AdapterContext, InboundEnvelope } from "../types.js";
import { chatKindOf, dmChannel, encodeReplyAddress, groupChannel, isSnowflake, PLATFORM, snowflakeTime } from "./ids.js";
import type { ChannelInfo, DiscordBotIdentity } from "./normalize.js";

export interface ApplicationCommand {
  name: string;
  description: string;
  type: 1;
  options: { name: string; description: string; type: 3; required: false }[];
  /** Installation contexts: GUILD_INSTALL (0) only, so a user who adds the app to their account is not offered the commands. */
  integration_types: [0];
  /** Interaction contexts: GUILD (0) and BOT_DM (1); never PRIVATE_CHANNEL (2), a DM or group DM between other people. */
  contexts: [0, 1];
}

const NAME = /^[-_\p{L}\p{N}]{1,32}$/u;
/** One free-text option, so `/new Project kickoff` works like the typed command. */
const ARGS_OPTION = { name: "args", description: "Arguments, as you would type them after the command", type: 3 as const, required: false as const };

/** The list as Discord accepts it: lower-case names of 1-32 characters, descriptions of 1-100, at most 100. */
export function discordCommandList(commands: AdapterContext["commands"], log?: Logger): ApplicationCommand[] {
  const out: ApplicationCommand[] = [];
  const seen = new Set<string>();
  for (const c of commands) {
    const name = c.name.replace(/^\//, "").toLowerCase();
    if (!NAME.test(name)) {
      log?.warn({ command: name }, "discord: command name is not 1-32 letters, digits, - or _; left out of the slash commands");
      continue;
    }
    if (seen.has(name)) continue;
    seen.add(name);
    out.push({ name, description: (c.description.trim() || name).slice(0, 100), type: 1, options: [ARGS_OPTION], integration_types: [0], contexts: [0, 1] });
  }
  return out.slice(0, 100);
}

export function commandsKey(botId: string): string {
  return `discord:${botId}:commands`;
}

export function commandsHash(applicationId: string, list: ApplicationCommand[]): string {
  return createHash("sha256").update(applicationId).update("\n").update(JSON.stringify(list)).digest("hex");
}

export async function syncCommands(
  rest: REST,
  ctx: Pick<AdapterContext, "kv" | "commands">,
  ids: { botId: string; applicationId: string },
  log: Logger,
): Promise<"registered" | "unchanged" | "failed"> {
  const list = discordCommandList(ctx.commands, log);
  const key = commandsKey(ids.botId);
  const hash = commandsHash(ids.applicationId, list);
  let previous: string | undefined;
  try {
    previous = await ctx.kv.get(key);
  } catch (err) {
    log.warn({ error: err instanceof Error ? err.name : typeof err }, "discord: could not read the registered command hash; registering commands");
  }
  if (previous === hash) return "unchanged";
  try {
    await rest.put(`/applications/${ids.applicationId}/commands`, { body: list });
  } catch (err) {
    const e = err as { status?: unknown; code?: unknown };
    log.warn({ status: e.status, code: e.code }, "discord: registering slash commands failed; typed commands still work. It is retried at the next start");
    return "failed";
  }
  try {
    await ctx.kv.set(key, hash);
  } catch (err) {
    log.warn(
      { error: err instanceof Error ? err.name : typeof err },
      "discord: could not store the registered command hash; commands will be registered again at the next start",
    );
  }
  log.info({ count: list.length }, "discord: slash commands registered");
  return "registered";
}

export interface CommandInteraction {
  id: string;
  token: string;
  applicationId: string;
  channelId: string;
  env: InboundEnvelope;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : undefined);

/** Interaction contexts (Discord's InteractionContextType). */
const PRIVATE_CHANNEL = 2;

/**
 * Whether an interaction comes from a place the bot is not in, through an install of the app to a user's
 * account: a DM or group DM between other people (context 2, PRIVATE_CHANNEL), or a server the app is not
 * installed to (its authorizing_integration_owners lack GUILD_INSTALL, key "0"). Such a place is neither a
 * private chat with the bot nor one of its groups: the interaction is not answered. A payload without these
 * fields (older API versions) is judged by its guild and channel as before.
 */
export function fromOutside(i: Obj): boolean {
  if (i.context === PRIVATE_CHANNEL) return true;
  const owners = obj(i.authorizing_integration_owners);
  return i.guild_id !== undefined && i.guild_id !== null && owners !== undefined && owners["0"] === undefined;
}

/**
 * A chat-input command interaction (type 2, data.type 1) -> its envelope, or
 * undefined for anything else (buttons, autocomplete, malformed). Never throws.
 */
export function normalizeInteraction(
  raw: unknown,
  bot: DiscordBotIdentity,
  channel?: ChannelInfo,
  onError?: (err: unknown) => void,
): CommandInteraction | undefined {
  try {
    const i = obj(raw);
    const data = obj(i?.data);
    if (!i || !data || i.type !== 2 || (data.type ?? 1) !== 1 || fromOutside(i)) return undefined;
    const { id, token, application_id: applicationId, channel_id: channelId, guild_id: guildId } = i;
    if (!isSnowflake(id) || typeof token !== "string" || !token || !isSnowflake(applicationId) || !isSnowflake(channelId)) return undefined;
    if (guildId !== undefined && !isSnowflake(guildId)) return undefined;
    const name = data.name;
    if (typeof name !== "string" || !NAME.test(name)) return undefined;
    const member = obj(i.member);
    const user = obj(member?.user) ?? obj(i.user);
    const senderId = user?.id;
    if (!user || !isSnowflake(senderId)) return undefined;
    // Same rule as messages: never our own, other bots only when allowed (the fuzz found the gap).
    if (senderId === bot.id || (user.bot === true && !bot.allowBots)) return undefined;
    const rawChannel = obj(i.channel);
    const type = channel?.type ?? (typeof rawChannel?.type === "number" ? rawChannel.type : undefined);
    const parentId = channel?.parentId ?? (isSnowflake(rawChannel?.parent_id) ? rawChannel.parent_id : undefined);
    const chatKind = chatKindOf({ guildId, channelType: type, parentId });
    if (!chatKind) return undefined;

    const interaction = { applicationId, token };
    const env: InboundEnvelope = {
      platform: PLATFORM,
      botId: bot.id,
      chatKind,
      chatId: channelId,
      senderId,
      text: [`/${name}`, ...optionValues(data.options)].join(" "),
      mentioned: true,
      eventId: id,
      occurredAt: snowflakeTime(id) ?? new Date(0),
      replyTo: encodeReplyAddress(bot.id, { channelId, interaction }),
      channel: chatKind === "private" ? dmChannel(bot.id, channelId) : groupChannel(bot.id, channelId),
    };
    if (guildId !== undefined) env.workspace = guildId;
    if (chatKind === "thread" && parentId) {
      env.chatId = parentId;
      env.threadId = channelId;
      env.replyTo = encodeReplyAddress(bot.id, { channelId, threadId: channelId, interaction });
      env.channel = groupChannel(bot.id, parentId, channelId);
    }
    const senderName = (typeof member?.nick === "string" && member.nick) || user.global_name || user.username;
    if (typeof senderName === "string" && senderName) env.senderName = senderName;
    // Another bot's interaction gets here only with allowBots: a sender as any other (the gateway ignores senderIsBot).
    const title = channel?.name ?? rawChannel?.name;
    if (chatKind !== "private" && typeof title === "string" && title) env.chatTitle = title;
    return { id, token, applicationId, channelId, env };
  } catch (err) {
    onError?.(err);
    return undefined;
  }
}

/** Option values in order, sub-commands flattened into words. */
function optionValues(v: unknown, depth = 0): string[] {
  if (!Array.isArray(v) || depth > 3) return [];
  const out: string[] = [];
  for (const o of v) {
    const opt = obj(o);
    if (!opt) continue;
    if (opt.type === 1 || opt.type === 2) {
      if (typeof opt.name === "string") out.push(opt.name);
      out.push(...optionValues(opt.options, depth + 1));
    } else if (["string", "number", "boolean"].includes(typeof opt.value)) {
      const s = String(opt.value).trim();
      if (s) out.push(s);
    }
  }
  return out;
}

/** Answers the interaction with "thinking..." (type 5) so Discord's 3 s window is met whatever the turn takes. */
export async function deferInteraction(rest: REST, i: { id: string; token: string }): Promise<void> {
  await rest.post(`/interactions/${i.id}/${i.token}/callback`, { body: { type: 5 }, auth: false });
}

import { DiscordAdapter } from "../../adapters/discord/index.js";
import { FakeDiscord, type DChannel, type DMessage, type DUser } from "../fakes/discord.js";
import type { ConformanceDriver, Place } from "./driver.js";
import { conformance } from "./suite.js";

/**
 * Discord through real discord.js: a guild whose channels and threads exist
 * before login (as a bot sees them in GUILD_CREATE), handed out to the
 * scenarios' groups in order.
 */
function discordDriver(): ConformanceDriver {
  const fake = new FakeDiscord();
  const POOL = 12;
  let channels: DChannel[] = [];
  let threads: DChannel[] = [];
  const users = new Map<string, DUser>();
  const groupChannel = new Map<string, DChannel>();
  const threadChannel = new Map<string, DChannel>();
  const last = new Map<string, { msg: DMessage; channel: DChannel }>();
  const user = (name: string) => users.get(name) ?? (users.set(name, fake.user(name.slice(0, 30))), users.get(name)!);
  const channelOf = (place: Place): DChannel => {
    if ("dm" in place) return fake.dmChannel(user(place.dm));
    if ("thread" in place)
      return threadChannel.get(place.thread) ?? (threadChannel.set(place.thread, threads[threadChannel.size]!), threadChannel.get(place.thread)!);
    return groupChannel.get(place.group) ?? (groupChannel.set(place.group, channels[groupChannel.size]!), groupChannel.get(place.group)!);
  };
  const presses = new Map<string, string[]>();
  const CARD = /^The agent wants to use the tool/;
  return {
    name: "discord (discord.js)",
    approvals: {
      cards(place) {
        const channel = channelOf(place);
        return fake
          .sent({ channelId: channel.id })
          .filter((m) => m.via === "channel" && CARD.test(m.history[0] ?? m.content))
          .map((m) => {
            const msg = fake.message(channel.id, m.id) ?? m.message;
            const rows = (msg.components as unknown[] | undefined) ?? [];
            return { messageId: m.id, text: msg.content, buttons: rows.length > 0 };
          });
      },
      async click(place, name, messageId, action) {
        const channel = channelOf(place);
        const msg = fake.message(channel.id, messageId);
        if (!msg) throw new Error(`no message ${messageId}`);
        const ids = ((msg.components as Array<{ components?: Array<{ custom_id?: string }> }> | undefined) ?? [])
          .flatMap((r) => r.components ?? [])
          .map((b) => b.custom_id ?? "");
        const customId = ids.find((id) => id.startsWith(`approval:${action}:`));
        if (!customId) throw new Error(`the card has no ${action} button`);
        const p = fake.pressButton({ user: user(name), message: msg, customId });
        const key = `${JSON.stringify(place)}|${name}`;
        presses.set(key, [...(presses.get(key) ?? []), String(p.id)]);
      },
      privateAnswers(place, name) {
        const mine = new Set(presses.get(`${JSON.stringify(place)}|${name}`) ?? []);
        return fake
          .sent({ channelId: channelOf(place).id })
          .filter((m) => (m.via === "followup" || m.via === "interaction") && m.ephemeral && m.interactionId && mine.has(m.interactionId))
          .map((m) => m.content);
      },
    },
    groups: {
      userId: (name) => user(name).id,
      // A thread's group is its parent channel.
      chatId: (place) => {
        const ch = channelOf(place);
        return "thread" in place ? String(ch.parent_id) : ch.id;
      },
      separateGroup: (name) => {
        // Leaving is leaving the whole server: this group's channel is in a guild of its own.
        const g = fake.addGuild({ channels: [`apart-${groupChannel.size}`] });
        groupChannel.set(name, Object.values(g.channels)[0]!);
        return { group: name };
      },
      hasLeft: (place) => fake.hasLeft(String(channelOf(place).guild_id)),
    },
    routing: {
      chatId: (place) => {
        const ch = channelOf(place);
        return "thread" in place ? String(ch.parent_id) : ch.id;
      },
      // A channel in a server of its own: its guild's route reaches no other scenario.
      workspaceGroup: (name) => {
        const g = fake.addGuild({ channels: [`agents-${groupChannel.size}`] });
        groupChannel.set(name, Object.values(g.channels)[0]!);
        return { place: { group: name }, match: { guild: g.id } };
      },
    },
    maxTextLength: 2000,
    async setup() {
      await fake.start();
      const guild = fake.addGuild({
        channels: Array.from({ length: POOL }, (_, i) => `room-${i}`),
        threads: Array.from({ length: POOL }, (_, i) => ({ name: `thread-${i}`, parent: `room-${POOL - 1}` })),
      });
      channels = Object.values(guild.channels).slice(0, POOL - 1);
      threads = Object.values(guild.threads);
      return { adapter: new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl }) };
    },
    async say(place, name, text, opts = {}) {
      const channel = channelOf(place);
      const content = !("dm" in place) && opts.mention ? `<@${fake.bot.id}> ${text}` : text;
      const msg = fake.userMessage({ channel, author: user(name), content });
      last.set(`${JSON.stringify(place)}|${name}`, { msg, channel });
    },
    async redeliverLast(place, name) {
      const l = last.get(`${JSON.stringify(place)}|${name}`)!;
      fake.dispatch("MESSAGE_CREATE", { ...l.msg, channel_type: l.channel.type }, l.msg.guild_id ? { guildId: l.msg.guild_id } : {});
    },
    rateLimitSends(retryAfterSec, count) {
      fake.rateLimitNext("POST /channels/:id/messages", { retryAfter: retryAfterSec, count });
    },
    replies(place) {
      // Ephemeral follow-ups are shown only to their presser, not in the chat.
      return fake
        .sent({ channelId: channelOf(place).id })
        .filter((m) => !m.ephemeral)
        .map((m) => m.content);
    },
    async teardown() {
      await fake.close();
    },
  };
}

conformance(discordDriver);

/**
 * Red-team probe: Discord apps can be installed to a user's account as well
 * as to a server (the Developer Portal's "User Install", on by default for
 * new applications), and a command registered without `contexts` is then
 * offered everywhere the user is: in their DMs and group DMs with other
 * people (interaction context 2, PRIVATE_CHANNEL) and in servers the bot was
 * never added to (context 0 with no guild install among the
 * authorizing_integration_owners). Switchboard's model is a bot's DMs and the
 * channels of servers it is in: a slash command from elsewhere must be
 * neither answered nor recorded (a DM between two people is not "a private
 * chat with the bot", and a server that never invited the bot is not a
 * group of it, even under GROUP_POLICY=open). And the commands are
 * registered for server installs and the guild and bot-DM contexts only.
 * Real discord.js against the loopback fake, real SQLite file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../../adapters/discord/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeDiscord, snowflake, type DUser } from "../../fakes/discord.js";
import { eventually, startApp } from "../../support/app.js";

let fake: FakeDiscord;
let app: App;

beforeAll(async () => {
  fake = new FakeDiscord();
  await fake.start();
  fake.addGuild({ channels: ["general"] });
  const r = await startApp("sqlite", [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl })], {
    DM_POLICY: "open",
    GROUP_POLICY: "open",
    REFLECT_EVERY_TURNS: "0",
  });
  app = r.app;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

const recorded = async (eventId: string) =>
  (await app.db.query("probe-inbound", app.db.q.selectFrom("InboundEvent").select(["status"]).where("eventId", "=", eventId))).length > 0;

/** A user-installed app's /status, as Discord sends it from a place the bot is not in. */
function userInstallCommand(user: DUser, where: { channel: Record<string, unknown>; guildId?: string; context: number }): string {
  const id = snowflake();
  const token = `ui${id}`;
  const perms = "2248473465835073";
  const payload: Record<string, unknown> = {
    id,
    application_id: fake.applicationId,
    type: 2,
    data: { id: snowflake(), name: "status", type: 1 },
    channel: where.channel,
    channel_id: where.channel.id,
    token,
    version: 1,
    app_permissions: perms,
    locale: "en-US",
    entitlements: [],
    authorizing_integration_owners: { "1": user.id },
    context: where.context,
    attachment_size_limit: 26_214_400,
  };
  if (where.guildId) {
    payload.guild_id = where.guildId;
    payload.guild_locale = "en-US";
    payload.member = { user, roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0, permissions: perms };
  } else payload.user = user;
  fake.world.interactions.set(id, { id, token, createdAt: Date.now(), channelId: String(where.channel.id), payload, followups: [] });
  fake.dispatch("INTERACTION_CREATE", payload);
  return id;
}

/** A barrier: a later message in the same channel id, handled after the interaction before it (the adapter keeps a channel's order). */
async function barrier(channel: Record<string, unknown>, author: DUser, guildId?: string): Promise<void> {
  const id = snowflake();
  const d: Record<string, unknown> = {
    id,
    channel_id: channel.id,
    type: 0,
    content: `<@${fake.bot.id}> barrier`,
    author,
    mentions: [fake.bot],
    mention_roles: [],
    attachments: [],
    embeds: [],
    timestamp: new Date().toISOString(),
    edited_timestamp: null,
    flags: 0,
    tts: false,
    mention_everyone: false,
    pinned: false,
    components: [],
    channel_type: channel.type,
  };
  if (guildId) d.guild_id = guildId;
  fake.dispatch("MESSAGE_CREATE", d);
  await eventually(() => recorded(id), Boolean, 15_000, "the barrier recorded");
}

describe("Discord user installs", () => {
  it("a user-installed /status in a DM between two people (context 2) is neither answered nor recorded", async () => {
    const mallory = fake.user("mallory");
    const alice = fake.user("alice");
    const dmOfTwo = { id: snowflake(), type: 1, recipients: [alice], last_message_id: null, flags: 0 };
    const id = userInstallCommand(mallory, { channel: dmOfTwo, context: 2 });
    await barrier(dmOfTwo, mallory);
    expect(await recorded(id)).toBe(false);
    expect(fake.interaction(id)?.responseType).toBeUndefined();
  });

  it("a user-installed /status in a server the bot was never added to is neither answered nor recorded, even under GROUP_POLICY=open", async () => {
    const mallory = fake.user("mallory2");
    const guildId = snowflake();
    const foreign = {
      id: snowflake(),
      type: 0,
      guild_id: guildId,
      name: "their-channel",
      position: 0,
      permission_overwrites: [],
      nsfw: false,
      parent_id: null,
    };
    const id = userInstallCommand(mallory, { channel: foreign, guildId, context: 0 });
    await barrier(foreign, mallory, guildId);
    expect(await recorded(id)).toBe(false);
    expect(fake.interaction(id)?.responseType).toBeUndefined();
  });

  it("the slash commands are registered for server installs, in servers and the bot's DMs only", async () => {
    const cmds = fake.commands();
    expect(cmds.length).toBeGreaterThan(0);
    for (const c of cmds) {
      expect(c.integration_types, c.name).toEqual([0]);
      expect(c.contexts, c.name).toEqual([0, 1]);
    }
  });
});

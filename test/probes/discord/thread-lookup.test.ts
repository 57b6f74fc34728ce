/**
 * Red-team probe: a thread's message is judged by its parent channel (its
 * admission covers its threads), which the adapter learns from discord.js's
 * cache or, for a thread the cache does not hold (created while the bot was
 * away, or never announced to it), from one GET /channels/:id. When that
 * lookup fails for a moment (a 5xx), the thread must not be misread as a
 * channel of its own: in an admitted channel that misreading is a silent
 * refusal ("unadmitted group"), a lost message. Real discord.js against the
 * loopback fake, real SQLite file.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { DiscordAdapter } from "../../../adapters/discord/index.js";
import type { App } from "../../../src/gateway/app.js";
import { ChannelType, FakeDiscord, snowflake, type DChannel, type GuildFixture } from "../../fakes/discord.js";
import { eventually, startApp } from "../../support/app.js";

let fake: FakeDiscord;
let app: App;
let guild: GuildFixture;

beforeAll(async () => {
  fake = new FakeDiscord();
  await fake.start();
  guild = fake.addGuild({ channels: ["support"] });
  const r = await startApp("sqlite", [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl })], {
    DM_POLICY: "pairing",
    GROUP_POLICY: "pairing",
    GROUP_REQUIRE_MENTION: "true",
    ALLOW_GROUPS: `discord:${guild.channels.support!.id}`,
    REFLECT_EVERY_TURNS: "0",
  });
  app = r.app;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

describe("a thread the cache does not hold", () => {
  it("a message in a new thread of an admitted channel is answered even when the first lookup of the thread fails with a 500", async () => {
    const parent = guild.channels.support!;
    // A thread Discord knows but discord.js was never told of (no THREAD_CREATE reached it).
    const thread: DChannel = {
      id: snowflake(),
      type: ChannelType.PublicThread,
      guild_id: guild.id,
      parent_id: parent.id,
      name: "unseen",
      last_message_id: null,
      message_count: 0,
      member_count: 1,
      rate_limit_per_user: 0,
      flags: 0,
      thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date().toISOString(), locked: false },
    } as DChannel;
    fake.world.channels.set(thread.id, thread);
    fake.failNext("GET /channels/:id", { status: 500 });
    const member = fake.user("member");
    fake.userMessage({ channel: thread, author: member, content: `<@${fake.bot.id}> hello from the unseen thread` });
    await eventually(
      () => fake.sent({ channelId: thread.id }).map((m) => m.content),
      (s) => s.some((c) => c.includes("echo: hello from the unseen thread")),
      15_000,
      "the answer in the thread",
    );
  });
});

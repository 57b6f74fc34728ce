import { afterEach, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../../adapters/discord/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeDiscord } from "../../fakes/discord.js";
import { eventually, startApp } from "../../support/app.js";

/** The Discord adapter behind the real gateway, end to end against FakeDiscord. */
describe("Discord end to end", () => {
  let fake: FakeDiscord;
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
    await fake?.close();
  });

  async function start(opts: { allowBots?: boolean } = {}) {
    fake = new FakeDiscord();
    await fake.start();
    const guild = fake.addGuild({ channels: ["general"] });
    const r = await startApp("sqlite", [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl, ...opts })]);
    app = r.app;
    return guild;
  }

  it("a forced disconnect and RESUME, with missed events replayed and an answered one sent again, gives 0 duplicate replies", async () => {
    await start();
    const alice = fake.user("alice");
    const dm = fake.dmChannel(alice);
    const first = fake.userMessage({ channel: dm, author: alice, content: "before the drop" });
    await eventually(
      () => fake.sent({ channelId: dm.id }),
      (s) => s.length === 1,
      10_000,
      "the first reply",
    );
    fake.forceDisconnect({ resumable: true });
    // Sent while the bot is disconnected: the fake replays them as missed events on RESUME.
    for (const t of ["missed one", "missed two"]) fake.userMessage({ channel: dm, author: alice, content: t });
    await eventually(
      () => fake.resumes.length,
      (n) => n >= 1,
      15_000,
      "a RESUME",
    );
    // A redelivery of an already-answered message (as after a reconnect that replays too much).
    fake.dispatch("MESSAGE_CREATE", { ...first, channel_type: 1 });
    await eventually(
      () => fake.sent({ channelId: dm.id }),
      (s) => s.length >= 3,
      15_000,
      "the replies to the missed events",
    );
    // The redelivery was recorded as a duplicate (the cause), and a reply to it would be sent before a graceful stop returns (running turns and queued replies finish first).
    await eventually(
      () => app!.metrics.text(),
      (t) => /switchboard_duplicates_dropped_total\{platform="discord"\} [1-9]/.test(t),
      15_000,
      "the redelivery dropped",
    );
    await app!.stop({ graceMs: 30_000 });
    app = undefined;
    expect(fake.sent({ channelId: dm.id }).map((m) => m.content)).toEqual(["echo: before the drop", "echo: missed one", "echo: missed two"]);
  });

  it("a /status application command is deferred and answered through the interaction", async () => {
    const guild = await start();
    const bob = fake.user("bob");
    const channel = guild.channels.general!;
    fake.userMessage({ channel, author: bob, content: `<@${fake.bot.id}> hello` });
    await eventually(
      () => fake.sent({ channelId: channel.id }),
      (s) => s.length === 1,
      10_000,
      "the mention's reply",
    );
    const interaction = fake.slashCommand({ name: "status", user: bob, channel });
    const id = String(interaction.id);
    await eventually(
      () => fake.interaction(id)?.responseType,
      (t) => t === 5,
      3000,
      "a deferral within Discord's 3 seconds",
    );
    const answered = await eventually(
      () => fake.sent({ via: "interaction" }),
      (s) => s.some((m) => m.content.startsWith("session: ") && !m.loading),
      10_000,
      "the status answer",
    );
    expect(answered.find((m) => m.content.startsWith("session: "))!.content).toMatch(/^turns: 1$/m);
    expect(fake.sent({ channelId: channel.id }).filter((m) => m.via === "channel")).toHaveLength(1);
  });

  it("another bot's mention is ignored, and answered with DISCORD_ALLOW_BOTS (the gateway dropped it even then)", async () => {
    for (const allowBots of [false, true]) {
      const guild = await start({ allowBots });
      const channel = guild.channels.general!;
      const relay = fake.user("relay", { bot: true });
      const bob = fake.user("bob");
      fake.userMessage({ channel, author: relay, content: `<@${fake.bot.id}> from a bot` });
      // The barrier: a person's mention after it, in the same channel, is answered after it would have been.
      fake.userMessage({ channel, author: bob, content: `<@${fake.bot.id}> from a person` });
      const sent = await eventually(
        () => fake.sent({ channelId: channel.id }).map((m) => m.content),
        (t) => t.some((c) => c.includes("echo: from a person")),
        10_000,
        "the person's answer",
      );
      expect(sent.some((c) => c.includes("echo: from a bot"))).toBe(allowBots);
      await app!.stop();
      app = undefined;
      await fake.close();
    }
  });
});

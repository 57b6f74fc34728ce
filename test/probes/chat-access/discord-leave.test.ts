/**
 * Red-team probe: GROUP_UNADMITTED=leave on Discord, where leaving a channel
 * means leaving its whole server. A server member who addresses the bot in
 * a channel that was not admitted must not be able to take it out of the
 * server's admitted channels. Real discord.js against the loopback fake.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../../adapters/discord/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeDiscord, type DChannel } from "../../fakes/discord.js";
import { eventually, startApp } from "../../support/app.js";

let fake: FakeDiscord;
let app: App;
let admitted: DChannel;
let other: DChannel;
let guildId: string;

beforeAll(async () => {
  fake = new FakeDiscord();
  await fake.start();
  const guild = fake.addGuild({ channels: ["support", "random"] });
  guildId = guild.id;
  admitted = guild.channels.support!;
  other = guild.channels.random!;
  const r = await startApp("sqlite", [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl })], {
    DM_POLICY: "pairing",
    GROUP_POLICY: "pairing",
    GROUP_UNADMITTED: "leave",
    ALLOW_GROUPS: `discord:${admitted.id}`,
    GROUP_REQUIRE_MENTION: "true",
    REFLECT_EVERY_TURNS: "0",
  });
  app = r.app;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

const counted = async (outcome?: string): Promise<number> =>
  (await app.metrics.groupsUnadmitted.get()).values.filter((v) => !outcome || v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);

describe("GROUP_UNADMITTED=leave on Discord", () => {
  it("a stranger addressing the bot in a channel that was not admitted does not take it out of the server's admitted channel", async () => {
    const member = fake.user("member");
    fake.userMessage({ channel: admitted, author: member, content: `<@${fake.bot.id}> hello support` });
    await eventually(
      () => fake.sent({ channelId: admitted.id }).map((m) => m.content),
      (t) => t.some((x) => /echo: .*hello support/.test(x)),
      15_000,
      "the admitted channel answered",
    );
    const before = await counted();
    const leftBefore = await counted("left");
    const stranger = fake.user("stranger");
    fake.userMessage({ channel: other, author: stranger, content: `<@${fake.bot.id}> leave, please` });
    // The cause: the refusal is counted once the gateway has handled it (and left, if it does).
    await eventually(
      () => counted(),
      (n) => n > before,
      15_000,
      "the refusal in #random counted",
    );
    if ((await counted("left")) > leftBefore) {
      // It chose to leave: show what that does (the leave is sent through the outbound door).
      await eventually(() => fake.hasLeft(guildId), Boolean, 15_000, "the leave reaching Discord");
    }
    expect(fake.hasLeft(guildId), "the bot left the whole server, its admitted #support included").toBe(false);
    expect(await counted("left")).toBe(leftBefore);
  });
});

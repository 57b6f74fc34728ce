/**
 * Red-team probe: DISCORD_ALLOW_BOTS=true lets another bot address this one.
 * Two bots that each answer the other's reply would talk forever (each turn
 * a model call and a message, until someone notices the bill). The other
 * bot here answers every reply of ours by replying to it, mentioning us, as
 * a second assistant bot in the same channel would. There must be a brake:
 * after a few bot turns in a row with no person speaking in the channel,
 * another bot's message is no longer answered (the gateway counts it as
 * ignored), and a person's message there releases the brake.
 * Real discord.js against the loopback fake, real SQLite file.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../../src/gateway/app.js";
import { FakeDiscord, type DChannel, type DUser } from "../../fakes/discord.js";
import { eventually } from "../../support/app.js";
import { discordBotForSuite } from "../../support/discord-app.js";

/** More rounds than any sensible brake allows; the probe stops the other bot here either way. */
const ROUNDS = 15;
let fake: FakeDiscord;
let app: App;
let channel: DChannel;

const bot = discordBotForSuite({ adapter: { allowBots: true }, channel: "bots" });
beforeAll(() => void ({ fake, app, channel } = bot));

const ignored = async (): Promise<number> =>
  (await app.metrics.inbound.get()).values.filter((v) => v.labels.platform === "discord" && v.labels.outcome === "ignored").reduce((n, v) => n + v.value, 0);
const ours = () => fake.sent({ channelId: channel.id }).filter((m) => m.via === "channel");

/** The other bot answers our latest reply, round after round, until ours stays silent (counted as ignored) or ROUNDS is reached. */
async function converse(relay: DUser, tag: string): Promise<number> {
  let answered = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const before = ours().length;
    const ignoredBefore = await ignored();
    const last = ours().at(-1)!;
    fake.userMessage({ channel, author: relay, content: `<@${fake.bot.id}> ${tag} round ${round}`, replyTo: last.id });
    const outcome = await eventually(
      async () => (ours().length > before ? "answered" : (await ignored()) > ignoredBefore ? "ignored" : undefined),
      (o) => o !== undefined,
      15_000,
      `our bot's answer to round ${round}, or its refusal`,
    );
    if (outcome === "ignored") break;
    answered++;
  }
  return answered;
}

describe("DISCORD_ALLOW_BOTS: a bot-to-bot loop is braked", () => {
  it("another bot replying to every answer is answered a few times at most, and a person's message releases the brake", async () => {
    const alice = fake.user("alice");
    const relay = fake.user("relay", { bot: true });
    fake.userMessage({ channel, author: alice, content: `<@${fake.bot.id}> start` });
    await eventually(ours, (s) => s.length === 1, 15_000, "the answer to alice");
    const first = await converse(relay, "loop");
    expect(first, "answers to the other bot before the brake").toBeLessThanOrEqual(5);
    expect(first, "other bots are still answered at all (DISCORD_ALLOW_BOTS)").toBeGreaterThan(0);
    // A person speaks: the bots may talk again, braked again.
    fake.userMessage({ channel, author: alice, content: `<@${fake.bot.id}> again` });
    await eventually(
      () => ours().map((m) => m.content),
      (s) => s.some((c) => c.includes("echo: again")),
      15_000,
      "the answer to alice's second message",
    );
    const second = await converse(relay, "loop2");
    expect(second).toBeGreaterThan(0);
    expect(second).toBeLessThanOrEqual(5);
  });

  it("a webhook's posts (a CI's notices, a feed) are not braked: each is answered however many come in a row", async () => {
    const feed = fake.addGuild({ channels: ["feed"] }).channels.feed!;
    const hook = fake.user("ci-notices", { bot: true });
    const answered = () => fake.sent({ channelId: feed.id }).filter((m) => m.via === "channel");
    for (let i = 1; i <= 6; i++) {
      fake.userMessage({ channel: feed, author: hook, content: `<@${fake.bot.id}> build ${i} passed`, extra: { webhook_id: hook.id } });
      await eventually(answered, (s) => s.length === i, 15_000, `the answer to the webhook's post ${i}`);
    }
    expect(
      answered()
        .map((m) => m.content)
        .at(-1),
    ).toContain("build 6 passed");
  });
});

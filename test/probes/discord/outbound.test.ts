/**
 * Red-team probes: what the bot sends back on Discord. A reply echoing
 * @everyone, @here, a role and a user pings nobody (every message call parses
 * no mentions and does not ping the replied-to author); a reply past 2,000
 * characters with a long code block is split into chunks that each fit and
 * each close every fence they open; 429s (per route, and with the global
 * flag) are waited out with nothing lost, repeated or reordered. Real
 * discord.js against the loopback fake, real SQLite file, the echo agent.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../../src/gateway/app.js";
import { FakeDiscord, type DChannel, type DRestCall } from "../../fakes/discord.js";
import { eventually } from "../../support/app.js";
import { discordBotForSuite } from "../../support/discord-app.js";

let fake: FakeDiscord;
let app: App;
let channel: DChannel;

const bot = discordBotForSuite();
beforeAll(() => void ({ fake, app, channel } = bot));

const replies = () => fake.sent({ channelId: channel.id }).filter((m) => m.via === "channel");
const bodyOf = (c: DRestCall) =>
  c.body as { content?: string; allowed_mentions?: { parse?: string[]; replied_user?: boolean; users?: string[]; roles?: string[] } };

describe("what the bot sends on Discord", () => {
  it("a reply repeating @everyone, @here, a role and a user mention pings nobody", async () => {
    const alice = fake.user("alice");
    const bob = fake.user("bob");
    const role = "222222222222222222";
    fake.userMessage({ channel, author: alice, content: `<@${fake.bot.id}> say @everyone @here <@&${role}> <@${bob.id}> ping-tag` });
    await eventually(
      () => replies().map((m) => m.content),
      (s) => s.some((c) => c.includes("ping-tag")),
      15_000,
      "the echo",
    );
    const writes = fake.restCalls(/^(POST|PATCH) \/(channels\/\d+\/messages|webhooks\/)/);
    expect(writes.length).toBeGreaterThan(0);
    for (const c of writes) {
      const b = bodyOf(c);
      if (b.content === undefined) continue;
      expect(b.allowed_mentions, `${c.method} ${c.path}`).toBeDefined();
      expect(b.allowed_mentions!.parse ?? [], `${c.method} ${c.path}`).toEqual([]);
      expect(b.allowed_mentions!.users ?? []).toEqual([]);
      expect(b.allowed_mentions!.roles ?? []).toEqual([]);
      expect(b.allowed_mentions!.replied_user ?? false).toBe(false);
      expect(b.content).not.toMatch(/@everyone|@here|<@&/);
    }
  });

  it("a reply over 2,000 characters with a long code block is split into chunks that fit and each close their fences", async () => {
    const carol = fake.user("carol", { premium_type: 2 } as never);
    const code = Array.from({ length: 120 }, (_, i) => `const line${i} = "${"x".repeat(20)}"; // ${i}`).join("\n");
    const content = `<@${fake.bot.id}> long-tag intro\n\`\`\`ts\n${code}\n\`\`\`\nafter the block`;
    const before = replies().length;
    fake.userMessage({ channel, author: carol, content });
    const chunks = await eventually(
      () => replies().slice(before),
      (s) => s.some((m) => m.content.includes("after the block")),
      15_000,
      "all the chunks",
    );
    expect(chunks.length).toBeGreaterThan(1);
    for (const m of chunks) {
      expect(m.content.length).toBeLessThanOrEqual(2000);
      expect((m.content.match(/^```/gm) ?? []).length % 2, `unbalanced fences in:\n${m.content.slice(0, 200)}`).toBe(0);
    }
    const joined = chunks.map((m) => m.content).join("\n");
    for (const i of [0, 60, 119]) expect(joined).toContain(`line${i} =`);
  });

  for (const global of [false, true]) {
    it(`429s on sending${global ? " with the global flag" : ""} are waited out: every reply once, in order`, async () => {
      const dave = fake.user(`dave${global ? "g" : ""}`);
      const tag = global ? "rl-global" : "rl-route";
      fake.rateLimitNext("POST /channels/:id/messages", { retryAfter: 0.2, count: 3, global });
      for (let i = 1; i <= 5; i++) fake.userMessage({ channel, author: dave, content: `<@${fake.bot.id}> ${tag} ${i}` });
      const got = await eventually(
        () =>
          replies()
            .map((m) => m.content)
            .filter((c) => c.includes(tag)),
        (s) => s.length >= 5,
        20_000,
        "five replies",
      );
      expect(fake.restCalls("POST /channels/:id/messages").filter((c) => c.status === 429).length).toBeGreaterThanOrEqual(3);
      // Stop and drain: nothing more may come.
      expect(got.map((c) => /(\d)$/.exec(c)?.[1])).toEqual(["1", "2", "3", "4", "5"]);
    });
  }
});

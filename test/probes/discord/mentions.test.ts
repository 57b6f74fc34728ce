/**
 * Red-team probe: what counts as addressing the bot in a mention-gated
 * channel. @everyone, @here and a role not in DISCORD_MENTION_ROLES never do
 * (the bot would answer every announcement); a configured role does, and
 * the role mention is not part of the question. Real discord.js against the
 * loopback fake, real SQLite file, the echo agent.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../../src/gateway/app.js";
import { FakeDiscord, type DChannel } from "../../fakes/discord.js";
import { eventually } from "../../support/app.js";
import { discordBotForSuite } from "../../support/discord-app.js";

const BOT_ROLE = "333333333333333333";
const OTHER_ROLE = "444444444444444444";
let fake: FakeDiscord;
let app: App;
let channel: DChannel;

const bot = discordBotForSuite({ adapter: { mentionRoles: [BOT_ROLE] } });
beforeAll(() => void ({ fake, app, channel } = bot));

describe("mentions on Discord", () => {
  it("@everyone, @here and another role are not addressed to the bot; its configured role is", async () => {
    const alice = fake.user("alice");
    fake.userMessage({ channel, author: alice, content: "@everyone announcement-tag", extra: { mention_everyone: true } });
    fake.userMessage({ channel, author: alice, content: "@here here-tag", extra: { mention_everyone: true } });
    fake.userMessage({ channel, author: alice, content: `<@&${OTHER_ROLE}> other-role-tag`, extra: { mention_roles: [OTHER_ROLE] } });
    fake.userMessage({ channel, author: alice, content: `<@&${BOT_ROLE}> bot-role-tag`, extra: { mention_roles: [BOT_ROLE] } });
    const said = await eventually(
      () => fake.sent({ channelId: channel.id }).map((m) => m.content),
      (s) => s.some((c) => c.includes("bot-role-tag")),
      15_000,
      "the answer to the bot's role",
    );
    expect(said).toHaveLength(1);
    expect(said[0]).not.toContain(BOT_ROLE);
  });
});

/**
 * Red-team probe: a message edited after it was answered, and the edit
 * redelivered (a RESUME's replay), is applied to the transcript and never
 * answered again; an edit that turns the text into a command runs nothing.
 * Real discord.js against the loopback fake, real SQLite file, the echo agent.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../../src/gateway/app.js";
import { FakeDiscord, type DChannel } from "../../fakes/discord.js";
import { eventually } from "../../support/app.js";
import { discordBotForSuite } from "../../support/discord-app.js";

let fake: FakeDiscord;
let app: App;
let channel: DChannel;

const bot = discordBotForSuite();
beforeAll(() => void ({ fake, app, channel } = bot));

const replies = () => fake.sent({ channelId: channel.id }).filter((m) => m.via === "channel");

describe("edits on Discord", () => {
  it("an answered message edited (twice delivered, once into /new) is not answered again and starts no new session", async () => {
    const alice = fake.user("alice");
    const msg = fake.userMessage({ channel, author: alice, content: `<@${fake.bot.id}> first version` });
    await eventually(replies, (s) => s.length === 1, 15_000, "the answer");
    const sessions = async () => (await app.db.query("probe-sessions", app.db.q.selectFrom("Session").select(["id"]))).length;
    const before = await sessions();
    const edited = fake.editUserMessage(msg, `<@${fake.bot.id}> second version`);
    // The same MESSAGE_UPDATE again, as a RESUME replays it.
    fake.dispatch("MESSAGE_UPDATE", { ...edited, channel_type: channel.type, member: { roles: [] } }, { guildId: String(edited.guild_id) });
    fake.editUserMessage(msg, "/new");
    // A barrier: a later message of the same channel is handled after the edits.
    fake.userMessage({ channel, author: alice, content: `<@${fake.bot.id}> barrier` });
    await eventually(
      () => replies().map((m) => m.content),
      (s) => s.some((c) => c.includes("echo: barrier")),
      15_000,
      "the barrier's answer",
    );
    expect(replies().map((m) => m.content)).toEqual([expect.stringContaining("first version"), expect.stringContaining("barrier")]);
    expect(await sessions()).toBe(before);
  });
});

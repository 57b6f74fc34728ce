/**
 * Red-team probes: who may press an approval card's buttons on Discord, and
 * from where. Under APPROVERS=requester (the default) only the member who
 * asked (or an operator) decides; a press is bound to the card's own
 * channel (a thread is a channel of its own); a press Discord replays (a
 * RESUME) or one forged to name another channel or server changes nothing.
 * Real discord.js against the loopback fake, real SQLite file, a fake model
 * that calls current_time (policy ask).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../../adapters/discord/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeDiscord, snowflake, type DChannel, type DMessage, type DUser, type GuildFixture } from "../../fakes/discord.js";
import type { FakeOpenAi } from "../../fakes/openai.js";
import { eventually, startApp } from "../../support/app.js";
import { clockAgent } from "../../support/clock-agent.js";

const CLOCK = "use the clock";
const CARD = /The agent wants to use the tool/;
let fake: FakeDiscord;
let app: App;
let model: FakeOpenAi;
let guild: GuildFixture;
let elsewhere: GuildFixture;

beforeAll(async () => {
  fake = new FakeDiscord();
  await fake.start();
  guild = fake.addGuild({ channels: ["general"], threads: [{ name: "side", parent: "general" }] });
  elsewhere = fake.addGuild({ channels: ["lobby"] });
  const clock = await clockAgent(CLOCK, "probe");
  model = clock.model;
  const r = await startApp(
    "sqlite",
    [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl })],
    { DM_POLICY: "open", GROUP_POLICY: "open", GROUP_REQUIRE_MENTION: "true", APPROVERS: "requester", REFLECT_EVERY_TURNS: "0" },
    { agentFactory: clock.agentFactory as never, mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } } },
  );
  app = r.app;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
  await model?.close();
});

const said = (ch: DChannel) => fake.sent({ channelId: ch.id }).filter((m) => m.via === "channel");

/** Asks for the clock in `ch` and returns the card's message (its buttons on it) and its approval id. */
async function askCard(ch: DChannel, who: DUser): Promise<{ msg: DMessage; id: string }> {
  const n = said(ch).filter((m) => CARD.test(m.content)).length;
  fake.userMessage({ channel: ch, author: who, content: `<@${fake.bot.id}> ${CLOCK}` });
  const card = (
    await eventually(
      () => said(ch).filter((m) => CARD.test(m.content)),
      (s) => s.length > n,
      15_000,
      "the approval card",
    )
  ).at(-1)!;
  const msg = fake.message(ch.id, card.id)!;
  const custom = (msg.components as Array<{ components: Array<{ custom_id: string }> }>)[0]!.components[0]!.custom_id;
  return { msg, id: custom.split(":")[2]! };
}

const status = async (id: string) =>
  (await app.db.query("probe-approval-status", app.db.q.selectFrom("Approval").select(["status"]).where("id", "=", id)))[0]?.status;

/** Presses a button as Discord sends it; the presser's private answer. */
async function press(user: DUser, msg: DMessage, action: string, id: string) {
  return answerOf(String(fake.pressButton({ user, message: msg, customId: `approval:${action}:${id}` }).id));
}

/** A press Discord never sends: the card's message and button, but naming another channel (and server). */
async function forgedPress(user: DUser, msg: DMessage, id: string, ch: DChannel) {
  const iid = snowflake();
  const token = `forged${iid}`;
  const payload: Record<string, unknown> = {
    id: iid,
    application_id: fake.applicationId,
    type: 3,
    data: { custom_id: `approval:approve:${id}`, component_type: 2 },
    channel: { ...ch },
    channel_id: ch.id,
    guild_id: ch.guild_id,
    member: { ...fake.world.member(user), permissions: "2248473465835073" },
    message: msg,
    token,
    version: 1,
    app_permissions: "2248473465835073",
    locale: "en-US",
    guild_locale: "en-US",
    entitlements: [],
    authorizing_integration_owners: { "0": ch.guild_id },
    context: 0,
    attachment_size_limit: 26_214_400,
  };
  fake.world.interactions.set(iid, { id: iid, token, createdAt: Date.now(), channelId: ch.id, guildId: ch.guild_id!, payload, followups: [] });
  fake.dispatch("INTERACTION_CREATE", payload, { guildId: ch.guild_id! });
  return answerOf(iid);
}

function answerOf(interactionId: string): Promise<string> {
  return eventually(
    () => fake.sent().find((m) => m.interactionId === interactionId && !m.loading)?.content,
    (c) => c !== undefined,
    15_000,
    "the presser's answer",
  ) as Promise<string>;
}

describe("approval card presses on Discord", () => {
  it("under APPROVERS=requester another member's press is refused; the requester's decides", async () => {
    const ch = guild.channels.general!;
    const alice = fake.user("alice");
    const bob = fake.user("bob");
    const { msg, id } = await askCard(ch, alice);
    expect(await press(bob, msg, "approve", id)).toMatch(/^Only /);
    expect(await status(id)).toBe("pending");
    expect(await press(alice, msg, "approve", id)).not.toMatch(/^Only /);
    expect(await status(id)).toBe("approved");
  });

  it("a press replayed after the decision (a RESUME's replay) changes nothing", async () => {
    const ch = guild.channels.general!;
    const alice = fake.user("alice2");
    const { msg, id } = await askCard(ch, alice);
    const approve = fake.pressButton({ user: alice, message: msg, customId: `approval:approve:${id}` });
    await answerOf(String(approve.id));
    expect(await status(id)).toBe("approved");
    // The same press again, as a replay: a fresh interaction row so the fake accepts its answer.
    const replay = { ...approve, id: snowflake(), token: `${String(approve.token)}r`, data: { custom_id: `approval:deny:${id}`, component_type: 2 } };
    fake.world.interactions.set(String(replay.id), {
      id: String(replay.id),
      token: String(replay.token),
      createdAt: Date.now(),
      channelId: ch.id,
      guildId: guild.id,
      payload: replay,
      followups: [],
    });
    fake.dispatch("INTERACTION_CREATE", replay, { guildId: guild.id });
    expect(await answerOf(String(replay.id))).toMatch(/^Already approved/);
    expect(await status(id)).toBe("approved");
  });

  it("a card asked in a thread is decided by a press in that thread; one forged as from the parent channel or another server is not", async () => {
    const thread = guild.threads.side!;
    const alice = fake.user("alice3");
    const { msg, id } = await askCard(thread, alice);
    expect(await forgedPress(alice, msg, id, guild.channels.general!)).toMatch(/no approval/i);
    expect(await status(id)).toBe("pending");
    expect(await forgedPress(alice, msg, id, elsewhere.channels.lobby!)).toMatch(/no approval/i);
    expect(await status(id)).toBe("pending");
    expect(await press(alice, msg, "approve", id)).not.toMatch(/^Only |no approval/i);
    expect(await status(id)).toBe("approved");
  });
});

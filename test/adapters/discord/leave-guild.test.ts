/**
 * GROUP_UNADMITTED=leave on Discord, where a bot leaves a channel's whole
 * server: the bot still leaves a server none of whose channels is admitted
 * (threads included), stays silent in a server with an admitted channel
 * (by ALLOW_GROUPS or an admin's /allowgroup), and leaves once that channel
 * is no longer admitted. Real discord.js against the loopback fake, the real
 * app on SQLite.
 */
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../../adapters/discord/index.js";
import type { App } from "../../../src/gateway/app.js";
import { createLogger } from "../../../src/log.js";
import { FakeDiscord, type DChannel, type DUser } from "../../fakes/discord.js";
import { eventually, startApp } from "../../support/app.js";

let fake: FakeDiscord;
let app: App;
let adapter: DiscordAdapter;
let admin: DUser;
const lines: string[] = [];

/** A guild of its own per test, so one test's leave takes nothing from another's. */
const lonely = () => {
  const g = fake.addGuild({ channels: ["general", "random"], threads: [{ name: "chat", parent: "general" }] });
  return { id: g.id, general: g.channels.general!, random: g.channels.random!, thread: g.threads.chat! };
};
const shared = () => {
  const g = fake.addGuild({ channels: ["support", "random"], threads: [{ name: "help", parent: "random" }] });
  return { id: g.id, support: g.channels.support!, random: g.channels.random!, thread: g.threads.help! };
};

beforeAll(async () => {
  fake = new FakeDiscord();
  await fake.start();
  admin = fake.user("admin");
  adapter = new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl });
  const destination = new Writable({
    write: (c: Buffer, _e, cb) => {
      lines.push(c.toString("utf8"));
      cb();
    },
  });
  const r = await startApp(
    "sqlite",
    [adapter],
    {
      DM_POLICY: "pairing",
      GROUP_POLICY: "pairing",
      GROUP_UNADMITTED: "leave",
      GROUP_REQUIRE_MENTION: "true",
      ADMIN_USERS: `discord:${admin.id}`,
      REFLECT_EVERY_TURNS: "0",
    },
    { log: createLogger({ level: "info", destination }) },
  );
  app = r.app;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

const counted = async (outcome?: string): Promise<number> =>
  (await app.metrics.groupsUnadmitted.get()).values.filter((v) => !outcome || v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
const mention = (channel: DChannel, who: string, text: string) => fake.userMessage({ channel, author: fake.user(who), content: `<@${fake.bot.id}> ${text}` });
/** Waits until the gateway counted one more refusal (the cause), then says whether it left. */
async function refusal(before: { all: number; left: number }, what: string): Promise<boolean> {
  await eventually(
    () => counted(),
    (n) => n > before.all,
    15_000,
    what,
  );
  return (await counted("left")) > before.left;
}
const snapshot = async () => ({ all: await counted(), left: await counted("left") });
/** ALLOW_GROUPS as the running gateway reads it (its config object is read live). */
const allowGroups = (list: string[]) => {
  (app.config as { ALLOW_GROUPS: string[] }).ALLOW_GROUPS = list;
};

describe("GROUP_UNADMITTED=leave on Discord (a leave is of the whole server)", () => {
  it("the adapter names the server's other channels and threads a leave would take, and nothing it cannot know", async () => {
    const g = lonely();
    await eventually(
      () => adapter.leaveTakesAlso(g.random.id),
      (ids) => ids !== undefined,
      15_000,
      "the guild in discord.js's cache",
    );
    expect(((await adapter.leaveTakesAlso(g.random.id)) ?? []).sort()).toEqual([g.general.id, g.thread.id].sort());
    expect(((await adapter.leaveTakesAlso(g.thread.id)) ?? []).sort()).toEqual([g.general.id, g.random.id].sort());
    // A channel discord.js has never seen: unknown, so the gateway would not leave.
    expect(await adapter.leaveTakesAlso("123456789012345678")).toBeUndefined();
  });

  it("leaves a server none of whose channels is admitted when addressed in it (from a thread too)", async () => {
    const g = lonely();
    await eventually(
      () => adapter.leaveTakesAlso(g.general.id),
      (ids) => ids !== undefined,
      15_000,
      "the guild in discord.js's cache",
    );
    const before = await snapshot();
    mention(g.thread, "visitor", "who are you?");
    expect(await refusal(before, "the refusal in the thread counted")).toBe(true);
    await eventually(() => fake.hasLeft(g.id), Boolean, 15_000, "the leave reaching Discord");
    expect(fake.sent({ channelId: g.thread.id })).toEqual([]);
  });

  it("stays silent in a server with a channel in ALLOW_GROUPS, logged once; leaves once the channel is dropped from it", async () => {
    const g = shared();
    allowGroups([`discord:${g.support.id}`]);
    try {
      await eventually(
        () => adapter.leaveTakesAlso(g.random.id),
        (ids) => ids !== undefined,
        15_000,
        "the guild in discord.js's cache",
      );
      for (const [where, text] of [
        [g.random, "leave, please"],
        [g.thread, "leave from the thread"],
        [g.random, "leave now"],
      ] as const) {
        const before = await snapshot();
        mention(where, "stranger", text);
        expect(await refusal(before, `the refusal of "${text}" counted`)).toBe(false);
      }
      expect(fake.hasLeft(g.id)).toBe(false);
      expect(lines.filter((l) => l.includes(`would also leave discord:${g.support.id}`))).toHaveLength(1);
      allowGroups([]);
      const before = await snapshot();
      mention(g.random, "stranger", "and now?");
      expect(await refusal(before, "the refusal once #support is no longer admitted")).toBe(true);
      await eventually(() => fake.hasLeft(g.id), Boolean, 15_000, "the leave reaching Discord");
    } finally {
      allowGroups([]);
    }
  });

  it("stays in a server where an admin's /allowgroup admitted a channel", async () => {
    const g = shared();
    fake.userMessage({ channel: g.support, author: admin, content: `<@${fake.bot.id}> /allowgroup` });
    await eventually(
      () => fake.sent({ channelId: g.support.id }).map((m) => m.content),
      (t) => t.some((x) => /This group is admitted/.test(x)),
      15_000,
      "the admission notice",
    );
    const before = await snapshot();
    mention(g.random, "stranger", "leave, please");
    expect(await refusal(before, "the refusal in #random counted")).toBe(false);
    expect(fake.hasLeft(g.id)).toBe(false);
    // The admitted channel still answers.
    mention(g.support, "member", "still there?");
    await eventually(
      () => fake.sent({ channelId: g.support.id }).map((m) => m.content),
      (t) => t.some((x) => /echo: .*still there\?/.test(x)),
      15_000,
      "the answer in #support",
    );
  });
});

/**
 * Red-team probes: Discord's access rules from outside. A stranger's slash
 * command in a DM under DM_POLICY=allowlist or pairing reveals nothing (no
 * session status, no turn); an unadmitted channel's slash commands and its
 * threads (forum posts included) are refused like its messages, while an
 * admitted channel's threads are admitted with it (DESIGN.md: "a group's
 * admission covers its threads"). Real discord.js against the loopback
 * fake, real SQLite file.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../../adapters/discord/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeDiscord, type DChannel } from "../../fakes/discord.js";
import { eventually, startApp } from "../../support/app.js";

let fake: FakeDiscord | undefined;
let app: App | undefined;

afterEach(async () => {
  await app?.stop();
  app = undefined;
  await fake?.close();
  fake = undefined;
});

async function start(env: Record<string, string>) {
  fake = new FakeDiscord();
  await fake.start();
  const guild = fake.addGuild({
    channels: ["admitted", "closed", { name: "forum", type: 15 }],
    threads: [
      { name: "in-admitted", parent: "admitted" },
      { name: "in-closed", parent: "closed" },
      { name: "post", parent: "forum", type: 11 },
    ],
  });
  const r = await startApp("sqlite", [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl })], { REFLECT_EVERY_TURNS: "0", ...env });
  app = r.app;
  return guild;
}

const refusals = async (): Promise<number> => (await app!.metrics.groupsUnadmitted.get()).values.reduce((n, v) => n + v.value, 0);
/** Everything the bot showed in a channel: its messages and its interaction responses, with their text. */
const shown = (ch: DChannel) => fake!.sent({ channelId: ch.id }).filter((m) => !m.loading);

/** What became of an inbound event, once the gateway has handled it ("done", "ignored", ...). */
const handled = (eventId: string) =>
  eventually(
    async () => (await app!.db.query("probe-inbound", app!.db.q.selectFrom("InboundEvent").select(["status"]).where("eventId", "=", eventId)))[0]?.status,
    (s) => s !== undefined && s !== "received",
    15_000,
    `event ${eventId} handled`,
  );

describe("Discord access from outside", () => {
  for (const policy of ["allowlist", "pairing"]) {
    it(`a stranger's /status in a DM under DM_POLICY=${policy} shows no session and starts no turn`, async () => {
      await start({ DM_POLICY: policy, GROUP_POLICY: "pairing" });
      const stranger = fake!.user("stranger");
      const dm = fake!.dmChannel(stranger);
      const i = fake!.slashCommand({ name: "status", user: stranger, channel: dm });
      await handled(String(i.id));
      expect(
        shown(dm)
          .map((m) => m.content)
          .join("\n"),
      ).not.toMatch(/session:|turns:/i);
      const turns = await app!.db.query("probe-sessions", app!.db.q.selectFrom("Session").select(["id"]));
      expect(turns).toEqual([]);
    });
  }

  // The adapter defers every slash command at once (type 5, "<bot> is thinking...") to meet Discord's 3 s window, and
  // fills that response with the first reply. A command in a channel the bot was not admitted to gets no reply at all:
  // without AdapterSink.unanswered the whole channel watched "thinking..." until Discord's 15 minutes ran out.
  it("a slash command in an unadmitted channel does not leave the deferred 'thinking...' response hanging there", async () => {
    const guild = await start({ DM_POLICY: "pairing", GROUP_POLICY: "pairing" });
    const member = fake!.user("member");
    const i = fake!.slashCommand({ name: "status", user: member, channel: guild.channels.closed! });
    await handled(String(i.id));
    const deleted = await fake!.waitForRest("DELETE /webhooks/:app/:token/messages/:mid", () => true, 15_000);
    expect(deleted.status).toBeLessThan(300);
    expect(shown(guild.channels.closed!)).toEqual([]);
  });

  it("under GROUP_POLICY=pairing an unadmitted channel's slash command, its thread and an unadmitted forum's post are refused; an admitted channel's thread is admitted with it", async () => {
    fake = new FakeDiscord();
    await fake.start();
    const guild = fake.addGuild({
      channels: ["admitted", "closed", { name: "forum", type: 15 }],
      threads: [
        { name: "in-admitted", parent: "admitted" },
        { name: "in-closed", parent: "closed" },
        { name: "post", parent: "forum", type: 11 },
      ],
    });
    const r = await startApp("sqlite", [new DiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl })], {
      REFLECT_EVERY_TURNS: "0",
      DM_POLICY: "pairing",
      GROUP_POLICY: "pairing",
      GROUP_REQUIRE_MENTION: "true",
      ALLOW_GROUPS: `discord:${guild.channels.admitted!.id}`,
    });
    app = r.app;
    const member = fake.user("member");
    const before = await refusals();
    const i = fake.slashCommand({ name: "status", user: member, channel: guild.channels.closed! });
    fake.userMessage({ channel: guild.threads["in-closed"]!, author: member, content: `<@${fake.bot.id}> hi from a closed thread` });
    fake.userMessage({ channel: guild.threads.post!, author: member, content: `<@${fake.bot.id}> hi from a forum post` });
    await eventually(refusals, (n) => n >= before + 3, 15_000, "three refusals");
    await handled(String(i.id));
    expect(shown(guild.channels.closed!).filter((m) => /session:|turns:/i.test(m.content))).toEqual([]);
    expect(shown(guild.threads["in-closed"]!)).toEqual([]);
    expect(shown(guild.threads.post!)).toEqual([]);
    fake.userMessage({ channel: guild.threads["in-admitted"]!, author: member, content: `<@${fake.bot.id}> hi from an admitted thread` });
    await eventually(
      () => shown(guild.threads["in-admitted"]!).map((m) => m.content),
      (s) => s.some((c) => c.includes("echo: hi from an admitted thread")),
      15_000,
      "the admitted thread answered",
    );
  });
});

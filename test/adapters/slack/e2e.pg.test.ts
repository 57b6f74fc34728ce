import { afterEach, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeSlack } from "../../fakes/slack.js";
import { eventually, startApp } from "../../support/app.js";
import { FaultPlan } from "../../support/faults.js";
import { prisma } from "../../support/prisma.js";

/** The Slack adapter behind the real gateway, end to end against FakeSlack. */
describe("Slack end to end", () => {
  let fake: FakeSlack;
  const apps: App[] = [];
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.stop();
    await fake?.close();
  });

  it("the same event delivered 3 times (2 HTTP retries and a Socket Mode redelivery) gets exactly 1 reply", async () => {
    fake = new FakeSlack();
    await fake.start();
    const http = await startApp("sqlite", [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })]);
    apps.push(http.app);
    const body = fake.events.message({ channel: "D0000DUP1", user: "U0000DUP1", text: "deliver me thrice" });
    expect((await fake.postEvent(`${http.url}/slack/events`, body)).status).toBe(200);
    expect((await fake.postEvent(`${http.url}/slack/events`, body, { retryNum: 1, retryReason: "http_timeout" })).status).toBe(200);
    expect((await fake.postEvent(`${http.url}/slack/events`, body, { retryNum: 2, retryReason: "http_timeout" })).status).toBe(200);
    await eventually(
      () => fake.sent({ channel: "D0000DUP1" }),
      (s) => s.length === 1,
      10_000,
      "the reply",
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(fake.sent({ channel: "D0000DUP1" }).map((m) => m.text)).toEqual(["echo: deliver me thrice"]);

    const sock = await startApp("sqlite", [new SlackAdapter({ botToken: fake.botToken, appToken: fake.appToken, apiUrl: fake.apiUrl })]);
    apps.push(sock.app);
    const again = fake.events.message({ channel: "D0000DUP2", user: "U0000DUP2", text: "over the socket" });
    const ack = await fake.deliverEvent(again);
    await fake.waitForAck(fake.redeliver(ack.envelopeId).envelope_id);
    await fake.waitForAck(fake.redeliver(ack.envelopeId).envelope_id);
    await eventually(
      () => fake.sent({ channel: "D0000DUP2" }),
      (s) => s.length === 1,
      10_000,
      "the socket reply",
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(fake.sent({ channel: "D0000DUP2" })).toHaveLength(1);
  });

  it.each(["sqlite", "postgresql"] as const)(
    "with the disk full, a Slack retry is not acknowledged (500, counted); a later retry is recorded and answered once (%s)",
    async (provider) => {
      fake = new FakeSlack();
      await fake.start();
      const faults = new FaultPlan();
      const s = await startApp(
        provider,
        [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })],
        {},
        { faults },
      );
      apps.push(s.app);
      const body = fake.events.message({ channel: "D0000FULL", user: "U0000FULL", text: "after the disk filled" });
      // The first delivery was lost on the way; Slack's retries are all there is, and the disk is full.
      faults.for("record-inbound", 60_000, provider === "sqlite" ? "SQLITE_FULL" : "ECONNRESET");
      expect((await fake.postEvent(`${s.url}/slack/events`, body, { retryNum: 1, retryReason: "http_timeout" })).status).toBe(500);
      expect((await fake.postEvent(`${s.url}/slack/events`, body, { retryNum: 2, retryReason: "http_error" })).status).toBe(500);
      faults.clear();
      expect((await fake.postEvent(`${s.url}/slack/events`, body, { retryNum: 3, retryReason: "http_error" })).status).toBe(200);
      await eventually(
        () => fake.sent({ channel: "D0000FULL" }),
        (m) => m.length === 1,
        10_000,
        "the reply",
      );
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      expect(metrics).toMatch(/switchboard_internal_errors_total\{where="slack:slack-receiver"\} 2/);
      expect(metrics).toMatch(/switchboard_store_failures_total\{op="record-inbound",code="(SQLITE_FULL|ECONNRESET)"\} 2/);
    },
  );

  it("a post Slack made but whose answer was lost is found by its metadata before the retry: 1 message, not 2", async () => {
    fake = new FakeSlack();
    await fake.start();
    const { app, url } = await startApp("sqlite", [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })]);
    apps.push(app);
    fake.loseAnswerNext("chat.postMessage");
    await fake.postEvent(`${url}/slack/events`, fake.events.message({ channel: "D0000LOST", user: "U0000LOST", text: "answer once" }));
    // The scheduler retries the transient failure; the read-back sees the post and sends nothing more.
    await eventually(
      () => fake.callsTo("conversations.history"),
      (c) => c.length >= 1,
      10_000,
      "the read-back",
    );
    await eventually(
      async () => (await prisma(app.db).read((c) => c.outboundDelivery.findMany())).map((d) => d.status),
      (s) => s.join() === "sent",
      10_000,
      "the reply marked sent",
    );
    expect(fake.sent({ channel: "D0000LOST" }).map((m) => m.text)).toEqual(["echo: answer once"]);
    expect(fake.callsTo("chat.postMessage")).toHaveLength(1);
  });

  it("an app_mention and its twin message get exactly 1 reply, in a thread under the mention; a follow-up in the thread needs no mention", async () => {
    fake = new FakeSlack();
    await fake.start();
    const { app, url } = await startApp("sqlite", [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })], {
      GROUP_REQUIRE_MENTION: "true",
    });
    apps.push(app);
    const ts = `${Math.floor(Date.now() / 1000)}.000100`;
    const text = `<@${fake.identity.botUserId}> plan the offsite`;
    await fake.postEvent(`${url}/slack/events`, fake.events.message({ channel: "C0000TWIN", user: "U0000ANN", text, ts }));
    await fake.postEvent(`${url}/slack/events`, fake.events.appMention({ channel: "C0000TWIN", user: "U0000ANN", text, ts }));
    const [reply] = await eventually(
      () => fake.sent({ channel: "C0000TWIN" }),
      (s) => s.length >= 1,
      10_000,
      "the reply",
    );
    expect(reply!.threadTs).toBe(ts);
    await fake.postEvent(`${url}/slack/events`, fake.events.message({ channel: "C0000TWIN", user: "U0000BEN", text: "and the budget?", threadTs: ts }));
    await eventually(
      () => fake.sent({ channel: "C0000TWIN" }),
      (s) => s.length >= 2,
      10_000,
      "the thread follow-up's reply",
    );
    await new Promise((r) => setTimeout(r, 500));
    const replies = fake.sent({ channel: "C0000TWIN" });
    expect(replies).toHaveLength(2);
    expect(replies.every((m) => m.threadTs === ts)).toBe(true);
    const sessions = await app.registry.listAll();
    expect(sessions).toHaveLength(1); // the thread is one conversation
  });

  it("a 429 storm ends with every reply delivered, in order per channel", async () => {
    fake = new FakeSlack();
    await fake.start();
    const { app, url } = await startApp("sqlite", [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })]);
    apps.push(app);
    fake.rateLimitNext("chat.postMessage", 1, 3);
    fake.rateLimitNext("chat.postMessage", 2, 2);
    const channels = ["D0000STM1", "D0000STM2", "D0000STM3"];
    for (let i = 0; i < 4; i++) {
      for (const ch of channels)
        expect((await fake.postEvent(`${url}/slack/events`, fake.events.message({ channel: ch, user: `U${ch.slice(1)}`, text: `storm ${i}` }))).status).toBe(
          200,
        );
    }
    for (const ch of channels) {
      const got = await eventually(
        () => fake.sent({ channel: ch }),
        (s) => s.length === 4,
        30_000,
        `the replies in ${ch}`,
      );
      expect(got.map((m) => m.text)).toEqual([0, 1, 2, 3].map((i) => `echo: storm ${i}`));
    }
    expect(fake.callsTo("chat.postMessage").filter((c) => c.status === 429)).toHaveLength(5);
  }, 60_000);

  it("every chat command works through /switchboard <command>: an operator's /switchboard approve <code> approves, and the code never reaches the agent", async () => {
    fake = new FakeSlack();
    await fake.start();
    const { app, url } = await startApp("sqlite", [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })], {
      DM_POLICY: "pairing",
      ADMIN_USERS: "slack:U0000OPER",
      // The operators' channel is admitted (GROUP_POLICY defaults to pairing here), so a stranger there is answered at all.
      ALLOW_GROUPS: "slack:C0000OPS1",
    });
    apps.push(app);
    await fake.postEvent(`${url}/slack/events`, fake.events.message({ channel: "D0000STRG", user: "U0000STRG", text: "let me in" }));
    const [hello] = await eventually(
      () => fake.sent({ channel: "D0000STRG" }),
      (s) => s.length === 1,
      10_000,
      "the pairing reply",
    );
    const code = /pairing code is ([A-Z0-9]{8})/.exec(hello!.text)![1]!;

    // Not an operator: refused, and the code is not handed to the agent as text.
    await fake.postCommand(
      `${url}/slack/commands`,
      fake.events.slashCommand({ command: "/switchboard", text: `approve ${code}`, user: "U0000RAND", channel: "C0000OPS1" }),
    );
    const [refused] = await eventually(
      () => fake.sent({ channel: "C0000OPS1" }),
      (s) => s.length === 1,
      10_000,
      "the refusal",
    );
    expect(refused!.text).toContain("for operators only");
    // The operator: approved. Then an alias spelled with its slash (/reset) is a command as well.
    await fake.postCommand(
      `${url}/slack/commands`,
      fake.events.slashCommand({ command: "/switchboard", text: `approve ${code}`, user: "U0000OPER", channel: "C0000OPS1" }),
    );
    const replies = await eventually(
      () => fake.sent({ channel: "C0000OPS1" }),
      (s) => s.length === 2,
      10_000,
      "the approval",
    );
    expect(replies[1]!.text).toBe(":white_check_mark: Approved U0000STRG on slack.");
    await fake.postCommand(
      `${url}/slack/commands`,
      fake.events.slashCommand({ command: "/switchboard", text: "/reset", user: "U0000OPER", channel: "C0000OPS1" }),
    );
    await eventually(
      () => fake.sent({ channel: "C0000OPS1" }),
      (s) => s.length === 3,
      10_000,
      "the /reset answer",
    );
    expect(fake.sent({ channel: "C0000OPS1" })[2]!.text).not.toContain("echo:");
    expect(fake.sent().some((m) => m.text.includes("echo:"))).toBe(false);

    await fake.postEvent(`${url}/slack/events`, fake.events.message({ channel: "D0000STRG", user: "U0000STRG", text: "thanks" }));
    await eventually(
      () => fake.sent({ channel: "D0000STRG" }),
      (s) => s.length === 2,
      10_000,
      "the approved sender's answer",
    );
    expect(fake.sent({ channel: "D0000STRG" })[1]!.text).toBe("echo: thanks");
  });

  it("Slack Connect: internal and external members of a shared-channel thread share one session; events for another app are dropped and counted", async () => {
    fake = new FakeSlack();
    await fake.start();
    const { app, url } = await startApp("sqlite", [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })]);
    apps.push(app);
    const events = `${url}/slack/events`;
    const ts = `${Math.floor(Date.now() / 1000)}.000200`;
    await fake.postEvent(events, fake.events.appMention({ channel: "C0000CONN", user: "U0000INT1", text: "kick off", ts }));
    await eventually(
      () => fake.sent({ channel: "C0000CONN" }),
      (s) => s.length === 1,
      10_000,
      "the mention's reply",
    );
    // An external member (another organisation: their own team on the event) answers in the thread.
    await fake.postEvent(events, fake.events.message({ channel: "C0000CONN", user: "U0000EXT1", text: "from outside", threadTs: ts, fromTeam: "T0000EXTERN" }));
    await fake.postEvent(events, fake.events.message({ channel: "C0000CONN", user: "U0000INT1", text: "from inside", threadTs: ts }));
    await eventually(
      () => fake.sent({ channel: "C0000CONN" }),
      (s) => s.length === 3,
      10_000,
      "both thread replies",
    );
    expect(await app.registry.listAll()).toHaveLength(1);

    // An event for another app, posted (and signed) to this app's URL: acknowledged, never recorded nor answered.
    const foreign = fake.events.message({ channel: "D0000FRGN", user: "U0000FRGN", text: "not for you", wrapper: { api_app_id: "A0000OTHER" } });
    expect((await fake.postEvent(events, foreign)).status).toBe(200);
    await fake.postEvent(events, fake.events.message({ channel: "D0000FRGN", user: "U0000FRGN", text: "for you" }));
    await eventually(
      () => fake.sent({ channel: "D0000FRGN" }),
      (s) => s.length === 1,
      10_000,
      "the reply to this app's event",
    );
    expect(fake.sent({ channel: "D0000FRGN" }).map((m) => m.text)).toEqual(["echo: for you"]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('switchboard_inbound_total{platform="slack",outcome="foreign_app"} 1');
  });
});

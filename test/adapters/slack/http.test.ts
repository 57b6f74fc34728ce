/**
 * SlackAdapter in HTTP mode: real Bolt, events signed by FakeSlack and posted
 * over real HTTP to the route the adapter mounted (served by a loopback
 * server standing in for the gateway's one HTTP server).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import { FakeSlack } from "../../fakes/slack.js";
import { RouteBridge, makeContext, sleep, until, type TestContext, type TestContextOptions } from "./helpers.js";

let sl: FakeSlack;
let adapter: SlackAdapter | undefined;
let bridge: RouteBridge | undefined;

beforeEach(async () => {
  sl = new FakeSlack();
  await sl.start();
});

afterEach(async () => {
  await adapter?.stop();
  adapter = undefined;
  await bridge?.close();
  bridge = undefined;
  await sl.close();
});

async function startHttp(o: TestContextOptions = {}): Promise<{ ctx: TestContext; url: string; commandsUrl: string }> {
  const ctx = makeContext(o);
  adapter = new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl });
  await adapter.start(ctx);
  bridge = new RouteBridge(ctx.routes);
  const base = await bridge.start();
  return { ctx, url: `${base}/slack/events`, commandsUrl: `${base}/slack/commands` };
}

describe("SlackAdapter, HTTP mode", () => {
  it("start: auth.test gives botId (bot user id), username and team; mounts POST /slack/events on the gateway's server; healthy", async () => {
    const { ctx } = await startHttp();
    expect(adapter!.botId).toBe("U0FAKEBOT");
    expect(adapter!.botUsername).toBe(sl.identity.botName);
    expect(adapter!.teamId).toBe("T0FAKE001");
    expect([...ctx.routes.keys()].sort()).toEqual(["POST /slack/commands", "POST /slack/events", "POST /slack/interactions"]);
    expect(adapter!.health()).toMatchObject({ ready: true });
    expect(sl.callsTo("auth.test")).toHaveLength(1);
  });

  it("forged, stale (> 5 min) and missing signatures get 401 and nothing is recorded", async () => {
    const { ctx, url } = await startHttp();
    const body = sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "evil" });
    expect((await sl.postEvent(url, body, { secret: "wrong-secret" })).status).toBe(401);
    expect((await sl.postEvent(url, body, { timestamp: Math.floor(Date.now() / 1000) - 301 })).status).toBe(401);
    expect((await sl.postEvent(url, body, { signature: `v0=${"0".repeat(64)}` })).status).toBe(401);
    const missing = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(missing.status).toBe(401);
    const noSig = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-slack-request-timestamp": String(Math.floor(Date.now() / 1000)) },
      body: JSON.stringify(body),
    });
    expect(noSig.status).toBe(401);
    await sleep(50);
    expect(ctx.calls).toHaveLength(0);
    // The secret is never written to the log.
    expect(ctx.logLines.join("")).not.toContain(sl.signingSecret);
  });

  it("answers url_verification with the challenge", async () => {
    const { url } = await startHttp();
    const r = await sl.postEvent(url, sl.events.urlVerification("chal-42"));
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ challenge: "chal-42" });
  });

  it("acks after inbound resolves, well within 3 s, even when the turn is slow", async () => {
    let turnDone = false;
    const { ctx, url } = await startHttp({
      onInbound: async () => {
        await sleep(150); // the durable record
        // The turn runs in the gateway's background and takes far longer than Slack's 3 s.
        void sleep(4000).then(() => (turnDone = true));
      },
    });
    const r = await sl.postEvent(url, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "slow one" }));
    const ackedAt = Date.now();
    expect(r.status).toBe(200);
    expect(r.ackMs).toBeLessThan(3000);
    expect(ctx.calls).toHaveLength(1);
    // The ack came only after the record resolved: compared with when the ack was received, not with
    // t0 + ackMs (the fake starts its clock after signing, which a busy machine can make 100+ ms late).
    expect(ctx.resolvedAt[0]).toBeLessThanOrEqual(ackedAt);
    expect(r.ackMs).toBeGreaterThanOrEqual(140);
    expect(turnDone).toBe(false);
  });

  it("a failed record is not acked (500, logged), so Slack redelivers", async () => {
    const { ctx, url } = await startHttp({
      onInbound: (_e, i) => {
        if (i === 0) throw new Error("store down");
      },
    });
    const body = sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "again" });
    expect((await sl.postEvent(url, body)).status).toBe(500);
    expect(ctx.logLines.some((l) => l.includes("could not be recorded; answering 500"))).toBe(true);
    expect((await sl.postEvent(url, body, { retryNum: 1 })).status).toBe(200);
    await until(() => ctx.resolvedAt.length === 2);
    expect(ctx.calls.map((e) => e.eventId)).toEqual([ctx.calls[0]!.eventId, ctx.calls[0]!.eventId]);
  });

  it("a retry (X-Slack-Retry-Num) whose record fails is not acked either: 500, and the next retry is recorded", async () => {
    // The disk fills after the first delivery was lost in transit: Slack's retries are all there is.
    const { ctx, url } = await startHttp({
      onInbound: (_e, i) => {
        if (i < 2) throw new Error("SQLITE_FULL");
      },
    });
    const body = sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "retried" });
    expect((await sl.postEvent(url, body, { retryNum: 1, retryReason: "http_timeout" })).status).toBe(500);
    expect((await sl.postEvent(url, body, { retryNum: 2, retryReason: "http_error" })).status).toBe(500);
    expect((await sl.postEvent(url, body, { retryNum: 3, retryReason: "http_error" })).status).toBe(200);
    expect(ctx.resolvedAt.filter(Boolean)).toHaveLength(1);
    expect(ctx.logLines.filter((l) => l.includes("could not be recorded; answering 500"))).toHaveLength(2);
  });

  it("HTTP retries (X-Slack-Retry-Num) are acked once recorded, carry the same eventId; the mention twin too", async () => {
    const { ctx, url } = await startHttp({ onInbound: () => sleep(300) });
    const msg = sl.events.message({ channel: "C0GENERAL", user: "U0BOB", text: `<@U0FAKEBOT> hello` });
    const mention = sl.events.appMention({ channel: "C0GENERAL", user: "U0BOB", text: "hello", ts: String(msg.event.ts) });
    await sl.postEvent(url, msg);
    const r1 = await sl.postEvent(url, msg, { retryNum: 1, retryReason: "http_timeout" });
    const r2 = await sl.postEvent(url, msg, { retryNum: 2, retryReason: "http_timeout" });
    expect([r1.status, r2.status]).toEqual([200, 200]);
    // The ack waited for the record (300 ms here), as for a first delivery.
    expect(r1.ackMs).toBeGreaterThanOrEqual(250);
    expect(ctx.resolvedAt.filter(Boolean)).toHaveLength(3);
    await sl.postEvent(url, mention);
    await until(() => ctx.resolvedAt.filter(Boolean).length === 4);
    const ids = new Set(ctx.calls.map((e) => e.eventId));
    expect(ids).toEqual(new Set([`C0GENERAL:${String(msg.event.ts)}`]));
  });

  it("thread continuity: a top-level mention roots a thread; a follow-up there without a mention is addressed", async () => {
    const { ctx, url } = await startHttp();
    const top = sl.events.appMention({ channel: "C0GENERAL", user: "U0BOB", text: "summarize" });
    const ts = String(top.event.ts);
    await sl.postEvent(url, top);
    expect(ctx.calls[0]).toMatchObject({ chatKind: "thread", threadId: ts, mentioned: true, replyTo: { chatId: "C0GENERAL", threadId: ts } });
    expect(ctx.store.get(`slack:U0FAKEBOT:thread:C0GENERAL:${ts}`)).toBe("1");

    await sl.postEvent(url, sl.events.message({ channel: "C0GENERAL", user: "U0ALICE", text: "and also this", threadTs: ts }));
    expect(ctx.calls[1]).toMatchObject({ chatKind: "thread", threadId: ts, mentioned: true, text: "and also this" });
    // Another thread the bot was never summoned into stays unaddressed.
    await sl.postEvent(url, sl.events.message({ channel: "C0GENERAL", user: "U0ALICE", text: "unrelated", threadTs: "1600000000.000001" }));
    expect(ctx.calls[2]).toMatchObject({ chatKind: "thread", mentioned: false });
  });

  it("remembers threads across a restart through ctx.kv", async () => {
    const { ctx, url } = await startHttp();
    ctx.store.set("slack:U0FAKEBOT:thread:C0GENERAL:1650000000.000001", "1");
    await sl.postEvent(url, sl.events.message({ channel: "C0GENERAL", user: "U0ALICE", text: "still here?", threadTs: "1650000000.000001" }));
    expect(ctx.calls[0]).toMatchObject({ mentioned: true });
  });

  it("ignores its own posts and edits (acked, nothing recorded); a user's edit is recorded as a change", async () => {
    const { ctx, url } = await startHttp();
    expect((await sl.postEvent(url, sl.events.botMessage({ channel: "C0GENERAL", text: "me", botId: sl.identity.botId }))).status).toBe(200);
    expect(
      (
        await sl.postEvent(
          url,
          sl.events.messageChanged({ channel: "C0GENERAL", user: sl.identity.botUserId, ts: "1700000000.000002", text: "x", previousText: "y" }),
        )
      ).status,
    ).toBe(200);
    expect(ctx.calls).toHaveLength(0);
    expect((await sl.postEvent(url, sl.events.messageChanged({ channel: "C0GENERAL", user: "U0BOB", ts: "1700000000.000001", text: "x" }))).status).toBe(200);
    expect(ctx.calls.map((e) => [e.text, e.change])).toEqual([["x", { kind: "edit", messageId: "1700000000.000001" }]]);
  });

  it("slash commands: /switchboard new -> /new, acked with an ephemeral note", async () => {
    const { ctx, url, commandsUrl } = await startHttp();
    const r = await sl.postCommand(commandsUrl, sl.events.slashCommand({ command: "/switchboard", text: "new", user: "U0ALICE", channel: "C0GENERAL" }));
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ response_type: "ephemeral", text: "Working on it…" });
    const r2 = await sl.postCommand(url, sl.events.slashCommand({ command: "/switchboard", text: "status", user: "U0ALICE", channel: "D0DM0001" }));
    expect(r2.status).toBe(200);
    expect(ctx.calls.map((e) => [e.text, e.chatKind, e.mentioned])).toEqual([
      ["/new", "group", true],
      ["/status", "private", true],
    ]);
  });

  it("stop: no more events are taken (503) and health goes not-ready", async () => {
    const { ctx, url } = await startHttp();
    await adapter!.stop();
    expect(adapter!.health().ready).toBe(false);
    const r = await sl.postEvent(url, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "late" }));
    expect(r.status).toBe(503);
    expect(ctx.calls).toHaveLength(0);
  });
});

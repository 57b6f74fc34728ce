/**
 * SlackAdapter in Socket Mode against FakeSlack: apps.connections.open on the
 * fake (not slack.com), envelopes acked only after ctx.inbound resolved, and
 * a redelivery normalized to the same eventId for the gateway to drop.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import { FakeSlack } from "../../fakes/slack.js";
import { makeContext, sleep, until, type TestContext, type TestContextOptions } from "./helpers.js";

let sl: FakeSlack;
let adapter: SlackAdapter | undefined;

beforeEach(async () => {
  sl = new FakeSlack();
  await sl.start();
});

afterEach(async () => {
  await adapter?.stop();
  adapter = undefined;
  await sl.close();
});

async function startSocket(o: TestContextOptions = {}): Promise<TestContext> {
  const ctx = makeContext(o);
  adapter = new SlackAdapter({ botToken: sl.botToken, appToken: sl.appToken, apiUrl: sl.apiUrl, socketReconnectMs: 200 });
  await adapter.start(ctx);
  return ctx;
}

describe("SlackAdapter, Socket Mode", () => {
  it("connects through the fake's apps.connections.open with the app token; no HTTP route; healthy", async () => {
    const ctx = await startSocket();
    expect(sl.callsTo("apps.connections.open")[0]!.token).toBe(sl.appToken);
    expect(ctx.routes.size).toBe(0);
    await until(() => adapter!.health().ready, 2000, "socket connected");
    expect(adapter!.health()).toMatchObject({ ready: true });
    expect(ctx.logLines.join("")).not.toContain(sl.appToken);
    expect(ctx.logLines.join("")).not.toContain(sl.botToken);
  });

  it("acks an envelope only after inbound resolved", async () => {
    const ctx = await startSocket({ onInbound: () => sleep(200) });
    const ack = await sl.deliverEvent(sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "over the socket" }));
    expect(ctx.calls).toHaveLength(1);
    expect(ctx.resolvedAt[0]).toBeLessThanOrEqual(ack.at);
    expect(ack.ms).toBeGreaterThanOrEqual(190);
    expect(ack.ms).toBeLessThan(3000);
    expect(ctx.calls[0]).toMatchObject({ chatKind: "private", text: "over the socket", channel: "slack:T0FAKE001:U0FAKEBOT:dm:D0DM0001" });
  });

  it("a failed record is not acked, so Slack redelivers; the redelivery is recorded", async () => {
    const ctx = await startSocket({
      onInbound: (_e, i) => {
        if (i === 0) throw new Error("store down");
      },
    });
    const env = sl.sendEnvelope("events_api", sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "x" }) as unknown as Record<string, unknown>);
    await until(() => ctx.calls.length === 1);
    await sleep(100);
    expect(sl.acks().find((a) => a.envelopeId === env.envelope_id)).toBeUndefined();
    const again = sl.redeliver(env.envelope_id);
    await sl.waitForAck(again.envelope_id);
    expect(ctx.calls[1]!.eventId).toBe(ctx.calls[0]!.eventId);
  });

  it("a redelivered envelope (retry_attempt) whose record fails is not acked either, and is logged", async () => {
    const ctx = await startSocket({
      onInbound: (_e, i) => {
        if (i < 2) throw new Error("SQLITE_FULL");
      },
    });
    const env = sl.sendEnvelope("events_api", sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "y" }) as unknown as Record<string, unknown>);
    await until(() => ctx.calls.length === 1);
    const retry = sl.redeliver(env.envelope_id, "timeout");
    await until(() => ctx.calls.length === 2);
    await until(() => ctx.logLines.filter((l) => l.includes("left unacked so Slack delivers it again")).length === 2);
    expect(sl.acks().filter((a) => a.envelopeId === env.envelope_id || a.envelopeId === retry.envelope_id)).toEqual([]);
    const third = sl.redeliver(retry.envelope_id, "timeout");
    await sl.waitForAck(third.envelope_id);
    expect(ctx.resolvedAt.filter(Boolean)).toHaveLength(1);
  });

  it("the same message 3 ways (delivery, redelivery, app_mention twin) yields one eventId", async () => {
    const ctx = await startSocket();
    const msg = sl.events.message({ channel: "C0GENERAL", user: "U0BOB", text: "<@U0FAKEBOT> ping" });
    await sl.deliverEvent(msg);
    const first = sl.envelopes()[0]!;
    const again = sl.redeliver(first.envelope_id, "timeout");
    await sl.waitForAck(again.envelope_id);
    await sl.deliverEvent(sl.events.appMention({ channel: "C0GENERAL", user: "U0BOB", text: "ping", ts: String(msg.event.ts) }));
    expect(ctx.calls).toHaveLength(3);
    expect(new Set(ctx.calls.map((e) => e.eventId))).toEqual(new Set([`C0GENERAL:${String(msg.event.ts)}`]));
    expect(sl.unacked()).toEqual([]);
  });

  it("slash commands over the socket: ack payload is the ephemeral note", async () => {
    const ctx = await startSocket();
    const ack = await sl.deliverCommand(sl.events.slashCommand({ command: "/switchboard", text: "new", user: "U0ALICE", channel: "C0GENERAL" }));
    expect(ack.payload).toEqual({ response_type: "ephemeral", text: "Working on it…" });
    expect(ctx.calls[0]).toMatchObject({ text: "/new" });
  });

  it("stop resolves promptly and closes the socket", async () => {
    await startSocket();
    const t0 = Date.now();
    await adapter!.stop();
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(adapter!.health().ready).toBe(false);
    await sl.waitFor(() => sl.socketConnections.open === 0);
  });
});

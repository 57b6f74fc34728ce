import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/log.js";
import { GatewayLedger } from "../../../src/gateway/ledger.js";
import { GatewayMetrics } from "../../../src/gateway/metrics.js";
import { noticeUnanswered } from "../../../src/gateway/inbound/unanswered.js";
import { Outbound } from "../../../src/gateway/outbound/outbound.js";
import { DeliveryStore } from "../../../src/store/deliveries.js";
import { FaultPlan } from "../../support/faults.js";
import { InboundStore } from "../../../src/store/inbound.js";
import { TurnStore } from "../../../src/store/turns.js";
import { openTestDb, type TestDb } from "../../support/db.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";

/**
 * The "I couldn't answer" notice of an event that reached its TTL leaves
 * through the outbound door either way: as a delivery row when the store
 * takes it, else as a line with none, paced and retried like any call (a
 * 429 is waited out, never lost).
 */
describe("the unanswered notice through the outbound door", () => {
  let t: TestDb | undefined;
  let outbound: Outbound | undefined;
  afterEach(async () => {
    outbound?.close();
    await t?.close();
    t = outbound = undefined;
  });

  async function setup(faults?: FaultPlan) {
    t = await openTestDb("sqlite", { ...(faults && { faults }) });
    const deliveries = new DeliveryStore(t.db);
    const metrics = new GatewayMetrics();
    outbound = new Outbound({ deliveries, metrics, log: silentLogger });
    const adapter = new MemoryAdapter();
    outbound.add(adapter);
    const deps = { inbound: new InboundStore(t.db), ledger: new GatewayLedger(new TurnStore(t.db, deliveries), 60_000), outbound, metrics, log: silentLogger };
    const received = async (eventId: string) => {
      const rec = await deps.inbound.record({ platform: "memory", botId: "b", eventId, envelope: "{}", occurredAt: new Date() });
      if (rec === "duplicate") throw new Error("recorded twice");
      return rec.id;
    };
    return { adapter, deps, metrics, received };
  }

  it("with the store failing, the notice goes out as a line, after waiting out a 429", async () => {
    const faults = new FaultPlan().once("commit-turn", "SQLITE_FULL");
    const { adapter, deps, received } = await setup(faults);
    adapter.rateLimitNext = 1;
    adapter.retryAfterMs = 10;
    const env = adapter.dm("42", "hello?");
    await noticeUnanswered(deps, env, await received("e42"), "test");
    expect(faults.injected.get("commit-turn")).toBe(1);
    expect(adapter.sent.map((s) => [s.chatId, s.text])).toEqual([["42", expect.stringMatching(/^I couldn't answer your message from \d\d:\d\d UTC/)]]);
  });

  it("with the store taking it, the notice is a delivery row sent in the chat's order", async () => {
    const { adapter, deps, received } = await setup();
    const env = adapter.dm("43", "hello?");
    await noticeUnanswered(deps, env, await received("e43"), "test");
    expect(adapter.sent.map((s) => s.chatId)).toEqual(["43"]);
    expect(adapter.sent[0]!.idempotencyKey).toMatch(/:0$/);
  });

  it("two that find the same event unanswered at once (a failing turn and a replay, two processes): the chat hears it once", async () => {
    const { adapter, deps, received, metrics } = await setup();
    const env = adapter.dm("44", "hello?");
    const id = await received("e44");
    await Promise.all([noticeUnanswered(deps, env, id, "its turn could not be committed"), noticeUnanswered(deps, env, id, "expired before it was handled")]);
    // An event answered meanwhile gets no notice at all.
    const answered = await received("e45");
    await deps.inbound.mark(answered, "done");
    await noticeUnanswered(deps, adapter.dm("45", "hi"), answered, "late");
    expect(adapter.sent.map((s) => s.chatId)).toEqual(["44"]);
    expect((await deps.inbound.find(id))!.status).toBe("expired");
    expect(await metrics.registry.getSingleMetricAsString("switchboard_unanswered_total")).toMatch(/ 1$/m);
  });
});

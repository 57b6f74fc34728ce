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
    return { adapter, deps, metrics };
  }

  it("with the store failing, the notice goes out as a line, after waiting out a 429", async () => {
    const faults = new FaultPlan().once("commit-turn", "SQLITE_FULL");
    const { adapter, deps } = await setup(faults);
    adapter.rateLimitNext = 1;
    adapter.retryAfterMs = 10;
    const env = adapter.dm("42", "hello?");
    await noticeUnanswered(deps, env, "no-such-inbound", "test");
    expect(faults.injected.get("commit-turn")).toBe(1);
    expect(adapter.sent.map((s) => [s.chatId, s.text])).toEqual([["42", expect.stringMatching(/^I couldn't answer your message from \d\d:\d\d UTC/)]]);
  });

  it("with the store taking it, the notice is a delivery row sent in the chat's order", async () => {
    const { adapter, deps } = await setup();
    const env = adapter.dm("43", "hello?");
    await noticeUnanswered(deps, env, "no-such-inbound", "test");
    expect(adapter.sent.map((s) => s.chatId)).toEqual(["43"]);
    expect(adapter.sent[0]!.idempotencyKey).toMatch(/:0$/);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/log.js";
import { GatewayMetrics } from "../../../src/gateway/metrics.js";
import { Outbound } from "../../../src/gateway/outbound/outbound.js";
import { DeliveryStore } from "../../../src/store/deliveries.js";
import { TurnStore } from "../../../src/store/turns.js";
import { openTestDb, type TestDb } from "../../support/db.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";

/**
 * The outbound door while the gateway starts: replies a previous run left
 * unsent are queued first, and whatever is enqueued meanwhile waits behind
 * them in its chat's one queue, even though the adapter's bot id (part of
 * the chat's key) is known only once it started.
 */
describe("the outbound door at start", () => {
  let t: TestDb | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("replies recovered from before a restart go out before what is enqueued during the start, in their chat's order", async () => {
    t = await openTestDb("sqlite");
    const to = { platform: "telegram", botId: "777", chatId: "42", kind: "private" as const };
    const expiresAt = new Date(Date.now() + 60_000);
    const left = (text: string) => ({ platform: to.platform, botId: to.botId, address: to, text, expiresAt });
    // Written by a previous run, never sent.
    await new TurnStore(t.db).commit({
      sessionId: "",
      inboundIds: [],
      messages: [],
      turnIncrement: 0,
      ttlMs: 60_000,
      deliveries: [left("recovered 1"), left("recovered 2")],
    });

    const outbound = new Outbound({ deliveries: new DeliveryStore(t.db), metrics: new GatewayMetrics(), log: silentLogger });
    // Its bot id is learned at start (getMe): until then the adapter is keyed without it.
    const adapter = new MemoryAdapter("");
    outbound.add(adapter);
    outbound.hold();
    try {
      expect(await outbound.queueUnsent()).toBe(2);
      const meanwhile = [outbound.enqueue({ kind: "line", to, text: "a line enqueued during the start" }), outbound.enqueue({ kind: "typing", to })];
      (adapter as { botId: string }).botId = "777";
      outbound.rekey(adapter);
      expect(adapter.sent).toEqual([]);
      outbound.release();
      await Promise.all(meanwhile);
      expect(await outbound.settle(10_000)).toBe(0);
      expect(adapter.sent.map((s) => s.text)).toEqual(["recovered 1", "recovered 2", "a line enqueued during the start"]);
      expect(adapter.typingCalls).toEqual(["42"]);
    } finally {
      outbound.close();
    }
  });
});

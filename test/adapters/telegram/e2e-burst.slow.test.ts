import { describe, it } from "vitest";
import { telegramEndToEnd } from "./e2e-harness.js";

/**
 * A restart halfway through a 500-update burst from 50 chats: several full
 * getUpdates batches (100 each) in flight across the restart. The same promise
 * on a 40-update burst is in e2e.test.ts (the unit tier).
 */
describe("Telegram end to end, a long burst", () => {
  const t = telegramEndToEnd();

  it("a restart halfway through a burst of 500 updates answers every update exactly once", async () => {
    await t.restartHalfwayThroughBurst(50, 10);
  }, 180_000);
});

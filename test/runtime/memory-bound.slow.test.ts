import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeRuntime, message, privateChat, type TestRuntime } from "../support/runtime.js";

/**
 * 10,000 turns in one session leave the live session's retained transcript
 * under a fixed bound: the window keeps at most CONTEXT_MAX_MESSAGES messages
 * and CONTEXT_MAX_CHARS characters, however long the conversation runs.
 */
describe("a live session's memory stays bounded", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await makeRuntime("sqlite", { context: { maxMessages: 40, maxChars: 8_000 } });
  });
  afterAll(async () => rt.close());

  it("10,000 turns retain at most the window's bound", async () => {
    const conv = privateChat();
    const info = await rt.registry.resolveChatChannel(conv);
    const session = rt.runner.open(info);
    rt.events.length = 0;
    let maxRetained = 0;
    const TURNS = 10_000;
    for (let i = 0; i < TURNS; i += 100) {
      const batch = await Promise.all(Array.from({ length: 100 }, (_, j) => rt.runner.run(session, message(conv, `turn ${i + j} ${"x".repeat(50)}`))));
      await Promise.all(batch.map((h) => h.done));
      maxRetained = Math.max(maxRetained, session.retainedMessages);
      rt.events.length = 0; // the test's own event log is not the session's memory
    }
    expect(await rt.transcript.count(info.id)).toBe(2 * TURNS);
    expect(session.info.turnCount).toBe(TURNS);
    expect(maxRetained).toBeLessThanOrEqual(40);
    expect(session.retainedMessages).toBeGreaterThan(0);
  }, 300_000);
});

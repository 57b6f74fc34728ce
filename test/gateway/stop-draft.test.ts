/**
 * A /stop mid-answer (issue 26, item 14): the draft the chat shows is
 * finished with all the turn streamed, not only its last paced edit, and
 * the transcript keeps that same text marked stopped; what the chat saw and
 * what a reload or a restart shows agree.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/types.js";
import type { App } from "../../src/gateway/app.js";
import { stoppedFromMeta } from "../../src/runtime/stop.js";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { abortableSleep } from "../support/runtime.js";
import { prisma } from "../support/prisma.js";

/** Streams "first ", waits for `release`, streams "second ", then waits until the turn is aborted. */
function gatedAgent(gate: { release?: () => void; secondTaken: boolean }): Agent {
  return {
    name: "gated",
    async *run(req) {
      yield { type: "text-delta", text: "first " };
      await new Promise<void>((r) => (gate.release = r));
      yield { type: "text-delta", text: "second " };
      // Pulled again: the runtime has taken "second " (and handed it to the draft).
      gate.secondTaken = true;
      await abortableSleep(600_000, req.signal);
    },
  };
}

describe("a draft stopped with /stop", () => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it("ends with all the turn streamed and '(stopped)', and the transcript keeps the same text, marked", async () => {
    // Edits a minute apart: after the draft is posted, no paced edit shows "second " before the stop.
    const a = new MemoryAdapter("777", {
      maxTextLength: 4096,
      editIntervalMs: { private: 60_000, group: 60_000 },
      perChat: { ratePerSec: 1000, burst: 1000 },
      global: { ratePerSec: 1000, burst: 1000 },
      canEdit: true,
    });
    const gate: { release?: () => void; secondTaken: boolean } = { secondTaken: false };
    app = (await startApp("sqlite", [a], { DM_POLICY: "open" }, { agentFactory: () => gatedAgent(gate), streamAfterMs: 0 })).app;
    await a.ctx.inbound(a.dm("400", "tell me a story"));
    const [draft] = await eventually(
      () => a.to("400"),
      (s) => s.length === 1 && gate.release !== undefined,
      10_000,
      "the draft",
    );
    expect(draft!.text.trim()).toBe("first");
    gate.release!();
    await eventually(
      () => gate.secondTaken,
      (t) => t,
      10_000,
      "the second delta taken",
    );
    await a.ctx.inbound(a.dm("400", "/stop"));
    const edits = await eventually(
      () => a.edits.filter((e) => e.messageId === draft!.messageId),
      (e) => e.some((x) => x.text.endsWith("(stopped)")),
      10_000,
      "the stopped edit",
    );
    expect(edits.map((e) => e.text)).toEqual(["first second\n\n(stopped)"]);
    const rows = await eventually(
      () => prisma(app!.db).read((c) => c.message.findMany({ orderBy: { seq: "asc" } })),
      (r) => r.length === 2,
      10_000,
      "the stopped turn in the transcript",
    );
    expect(rows.map((r) => [r.role, r.content.trim(), stoppedFromMeta(r.meta)])).toEqual([
      ["user", "tell me a story", false],
      ["assistant", "first second", true],
    ]);
  });
});

/**
 * Every turn ends, whatever ends it: answered, interrupted by a newer
 * message (BUSY_POLICY=interrupt), merged into a follow-up (collect), or
 * fenced. After 1,000 messages under each busy policy, the per-chat and
 * per-turn state of every layer is back to its idle size, and no streamed
 * draft is left showing a partial answer: each one ends as the full answer
 * or with the "(stopped)" marker.
 */
import { afterEach, describe, expect, it } from "vitest";
import { latestUserText } from "../../src/agent/echo.js";
import type { Agent } from "../../src/agent/types.js";
import type { App } from "../../src/gateway/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { eventually, startApp } from "../support/app.js";
import { abortableSleep } from "../support/runtime.js";
import { prisma } from "../support/prisma.js";

const CHATS = 50;
const PER_CHAT = 20;

/** Streams `echo: <text>` in 8 pieces, 40 ms apart: long enough for a draft to show. */
function streamingEcho(): Agent {
  return {
    name: "streaming-echo",
    async *run(req) {
      const text = `echo: ${latestUserText(req.messages)}`;
      const step = Math.ceil(text.length / 8);
      for (let i = 0; i < text.length; i += step) {
        await abortableSleep(40, req.signal);
        yield { type: "text-delta", text: text.slice(i, i + step) };
      }
      yield { type: "done", text, toolRounds: 0 };
    },
  };
}

let app: App | undefined;
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

describe("per-chat state after 1,000 messages", () => {
  for (const policy of ["queue", "collect", "interrupt"] as const) {
    it(`BUSY_POLICY=${policy}: back to idle size, no draft left unfinished`, async () => {
      const adapter = new MemoryAdapter();
      const started = await startApp("sqlite", [adapter], { BUSY_POLICY: policy }, { agentFactory: () => streamingEcho(), streamAfterMs: 0 });
      app = started.app;
      const a = app;
      await Promise.all(
        Array.from({ length: CHATS }, async (_, c) => {
          const chat = `chat${c}`;
          for (let i = 0; i < PER_CHAT; i++) {
            const before = adapter.to(chat).length;
            await adapter.ctx.inbound(adapter.dm(chat, `m${c}-${i} end.`));
            // Every other message waits until something is shown in the chat (a draft, mostly), so the next one meets a visible partial answer.
            if (i % 2 === 0)
              await eventually(
                () => adapter.to(chat).length,
                (n) => n > before,
                20_000,
                `something shown in ${chat}`,
              );
          }
        }),
      );
      // Settled: every event handled, every reply sent.
      await eventually(
        async () => await prisma(a.db).read((db) => db.inboundEvent.count({ where: { status: "received" } })),
        (n) => n === 0,
        60_000,
        "every event handled",
      );
      await a.gateway.idle();
      await eventually(
        async () => await prisma(a.db).read((db) => db.outboundDelivery.count({ where: { status: { in: ["pending", "sending"] } } })),
        (n) => n === 0,
        60_000,
        "every reply sent",
      );
      await eventually(
        () => a.runner.stats(),
        (s) => s.running === 0,
        30_000,
        "no turn running",
      );
      await a.gateway.deps.outbound.drain();
      await eventually(
        () => a.gateway.deps.outbound.stats(),
        (s) => s.drafts === 0 && s.chains === 0 && s.held === 0,
        30_000,
        "outbound idle",
      );

      const gateway = a.gateway.stats();
      const outbound = a.gateway.deps.outbound.stats();
      const runner = a.runner.stats();
      const ledger = a.gateway.deps.ledger.occurredAt.size;
      // What each message the bot sent shows now: its last edit, else what was sent.
      const last = new Map<string, string>();
      for (const s of adapter.sent) last.set(s.messageId, s.text);
      for (const e of adapter.edits) last.set(e.messageId, e.text);
      const shown = [...last.values()];
      const stopped = shown.filter((t) => t.endsWith("(stopped)")).length;
      const partial = shown.filter((t) => !t.endsWith("(stopped)") && !/end\.$/.test(t));
      console.log(
        `${policy}: ${JSON.stringify({ messages: CHATS * PER_CHAT, shown: shown.length, stopped, partial: partial.length, gateway, outbound, runner, ledger })}`,
      );
      expect(partial).toEqual([]);
      expect({ arrivals: gateway.arrivals, chains: gateway.chains, recording: gateway.recording }).toEqual({ arrivals: 0, chains: 0, recording: 0 });
      expect(outbound).toEqual({ drafts: 0, turnStart: 0, chains: 0, inFlight: 0, held: 0 });
      expect({ running: runner.running, queued: runner.queued, collected: runner.collected, idleWaiters: runner.idleWaiters }).toEqual({
        running: 0,
        queued: 0,
        collected: 0,
        idleWaiters: 0,
      });
      expect(ledger).toBe(0);
      // One live session (and its worker) per chat at most: nothing per message.
      expect(runner.live).toBeLessThanOrEqual(CHATS);
      expect(runner.workers).toBeLessThanOrEqual(CHATS);
      expect(gateway.bindings).toBeLessThanOrEqual(CHATS);
      if (policy === "interrupt") expect(stopped).toBeGreaterThan(0);
    }, 240_000);
  }
});

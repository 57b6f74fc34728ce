import { afterEach, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/types.js";
import type { App } from "../../src/gateway/app.js";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { slowAgent } from "../support/runtime.js";
import { prisma } from "../support/prisma.js";

describe("gateway behaviour", () => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  async function start(env: Record<string, string> = {}, adapter = new MemoryAdapter(), agent?: Agent, streamAfterMs?: number) {
    const r = await startApp("sqlite", [adapter], env, {
      ...(agent ? { agentFactory: () => agent } : {}),
      ...(streamAfterMs !== undefined ? { streamAfterMs } : {}),
    });
    app = r.app;
    return adapter;
  }

  const thread = (a: MemoryAdapter, chat: string, thread: string, user: string, text: string) =>
    a.group(chat, user, text, {
      chatKind: "thread",
      threadId: thread,
      mentioned: true,
      replyTo: { platform: "telegram", botId: a.botId, chatId: chat, threadId: thread },
    });

  it("THREAD_SESSIONS=own gives each thread its own session; replies go into the thread", async () => {
    const a = await start({ THREAD_SESSIONS: "own" });
    await a.ctx.inbound(a.group("-1", "u", "main", { mentioned: true }));
    await a.ctx.inbound(thread(a, "-1", "t1", "u", "in thread"));
    await eventually(
      () => a.sent,
      (s) => s.length === 2,
    );
    expect(a.sent.find((s) => s.text === "echo: in thread")?.threadId).toBe("t1");
    expect(await app!.registry.listAll()).toHaveLength(2);
  });

  it("THREAD_SESSIONS=parent makes threads share the parent channel's session", async () => {
    const a = await start({ THREAD_SESSIONS: "parent" });
    await a.ctx.inbound(a.group("-2", "u", "main", { mentioned: true }));
    await a.ctx.inbound(thread(a, "-2", "t1", "u", "in thread"));
    await eventually(
      () => a.sent,
      (s) => s.length === 2,
    );
    expect(a.sent.find((s) => s.text === "echo: in thread")?.threadId).toBe("t1");
    expect(await app!.registry.listAll()).toHaveLength(1);
  });

  it("streams a slow answer: a draft is sent, edited in place at the adapter's pace, and becomes the final reply", async () => {
    const a = await start({}, new MemoryAdapter(), slowAgent(["Once ", "upon ", "a ", "time ", "there ", "was ", "a ", "gateway."], 60), 100);
    await a.ctx.inbound(a.dm("300", "story please"));
    await eventually(
      () => a.edits,
      (e) => e.some((x) => x.text === "Once upon a time there was a gateway."),
      10_000,
      "the final edit",
    );
    expect(a.to("300")).toHaveLength(1); // one message, edited in place
    const draftId = a.to("300")[0]!.messageId;
    expect(a.edits.every((e) => e.messageId === draftId)).toBe(true);
    // Paced: edits are at least the private edit interval (100 ms in this adapter) apart, so fewer edits than deltas.
    expect(a.edits.length).toBeLessThan(8);
    // The "sent" mark is written after the platform answered the last edit (one group commit later).
    const deliveries = await eventually(
      () => prisma(app!.db).read((c) => c.outboundDelivery.findMany()),
      (ds) => ds.every((d) => d.status === "sent"),
      5_000,
      "the sent mark",
    );
    expect(deliveries.map((d) => [d.status, d.platformMessageId])).toEqual([["sent", draftId]]);
  });

  it("an answer that was only slow to start goes out as one message, with no draft to repeat after a crash", async () => {
    const a = await start({}, new MemoryAdapter(), slowAgent(["all at once"], 300), 50);
    await a.ctx.inbound(a.dm("305", "hi"));
    await eventually(
      () => a.to("305"),
      (s) => s.length === 1,
    );
    // A second message would be sent before a graceful stop returns (running turns and queued replies finish first).
    await app!.stop({ graceMs: 30_000 });
    app = undefined;
    expect(a.to("305").map((m) => m.text)).toEqual(["all at once"]);
    // The durable reply itself (with its idempotency key), not a draft edited into it.
    expect(a.to("305")[0]!.idempotencyKey).toMatch(/:0$/);
    expect(a.edits).toEqual([]);
  });

  it("a streamed draft never overtakes the chat's earlier replies still queued", async () => {
    const quickOrSlow: Agent = {
      name: "quick-or-slow",
      run(req) {
        const last = String(req.messages.at(-1)?.content ?? "");
        return last.includes("slow") ? slowAgent(["draft ", "then ", "more"], 60).run(req) : slowAgent([`quick answer`], 0).run(req);
      },
    };
    const a = await start({}, new MemoryAdapter(), quickOrSlow, 50);
    const outbound = app!.gateway.deps.outbound;
    outbound.hold(); // the first reply waits in the chat's queue, as it would behind a slow database or platform
    await a.ctx.inbound(a.dm("310", "first"));
    await new Promise((r) => setTimeout(r, 100));
    await a.ctx.inbound(a.dm("310", "slow one"));
    await new Promise((r) => setTimeout(r, 400)); // the slow turn streams past streamAfterMs meanwhile
    outbound.release();
    await eventually(
      () => a.edits,
      (e) => e.some((x) => x.text === "draft then more") || a.to("310").some((m) => m.text === "draft then more"),
      10_000,
      "the slow answer",
    );
    expect(a.to("310")[0]!.text).toBe("quick answer");
  });

  it("falls back to one final message where the platform cannot edit", async () => {
    const noEdit = new MemoryAdapter("777", {
      maxTextLength: 4096,
      editIntervalMs: { private: 100, group: 100 },
      perChat: { ratePerSec: 1000, burst: 1000 },
      global: { ratePerSec: 1000, burst: 1000 },
      canEdit: false,
    });
    const a = await start({}, noEdit, slowAgent(["a", "b", "c", "d"], 60), 50);
    await a.ctx.inbound(a.dm("301", "go"));
    await eventually(
      () => a.to("301"),
      (s) => s.length === 1,
    );
    // A second message would be sent before a graceful stop returns (running turns and queued replies finish first).
    await app!.stop({ graceMs: 30_000 });
    app = undefined;
    expect(a.to("301").map((s) => s.text)).toEqual(["abcd"]);
    expect(a.edits).toEqual([]);
  });

  it("ADMIN_COMMANDS restricts commands to operators", async () => {
    const a = await start({ ADMIN_COMMANDS: "model,approve", ADMIN_USERS: "telegram:1" });
    await a.ctx.inbound(a.dm("2", "/model big-one"));
    await a.ctx.inbound(a.dm("1", "/model big-one"));
    await eventually(
      () => a.sent,
      (s) => s.length === 2,
    );
    expect(a.to("2")[0]!.text).toBe("/model is for operators only.");
    expect(a.to("1")[0]!.text).toBe("model set to big-one.");
    await a.ctx.inbound(a.dm("2", "/help"));
    const help = (
      await eventually(
        () => a.to("2"),
        (s) => s.length === 2,
      )
    )[1]!.text;
    expect(help).not.toContain("/model");
    expect(help).toContain("/new");
  });

  it("records the turn latency of answered messages in /metrics", async () => {
    const a = await start();
    for (let i = 0; i < 3; i++) await a.ctx.inbound(a.dm("400", `m${i}`));
    await eventually(
      () => a.to("400"),
      (s) => s.length === 3,
    );
    await app!.gateway.idle();
    const text = await app!.metrics.text();
    expect(text).toMatch(/switchboard_turn_latency_seconds_count 3/);
  });
});

describe("a rotation made outside the gateway", () => {
  it("an operator's `sessions rotate` while the gateway runs: the next turn lands in the new session", async () => {
    const adapter = new MemoryAdapter();
    const { app } = await startApp("sqlite", [adapter]);
    try {
      await adapter.ctx.inbound(adapter.dm("500", "first"));
      await eventually(
        () => adapter.to("500"),
        (s) => s.length === 1,
      );
      const [old] = await app.registry.listAll();
      const r = await app.registry.rotateBound(old!.id); // what `switchboard sessions rotate` does, from another process
      await adapter.ctx.inbound(adapter.dm("500", "second"));
      await eventually(
        () => adapter.to("500"),
        (s) => s.length === 2,
      );
      await adapter.ctx.inbound(adapter.dm("500", "third"));
      await eventually(
        () => adapter.to("500"),
        (s) => s.length === 3,
      );
      await app.gateway.idle();
      const rows = await prisma(app.db).read((c) => c.message.findMany({ where: { sessionId: r.current.id }, orderBy: { seq: "asc" } }));
      expect(rows.map((m) => m.content)).toEqual(["second", "echo: second", "third", "echo: third"]);
      expect(await prisma(app.db).read((c) => c.message.count({ where: { sessionId: old!.id } }))).toBe(2);
    } finally {
      await app.stop();
    }
  });
});

describe("a /new race through the gateway", () => {
  it("100 /new sent at once in one chat rotate once; 99 are told a fresh session was already started", async () => {
    const adapter = new MemoryAdapter();
    const { app } = await startApp("sqlite", [adapter]);
    try {
      await adapter.ctx.inbound(adapter.dm("600", "hello"));
      await eventually(
        () => adapter.to("600"),
        (s) => s.length === 1,
      );
      await Promise.all(Array.from({ length: 100 }, () => adapter.ctx.inbound(adapter.dm("600", "/new"))));
      const replies = await eventually(
        () => adapter.to("600"),
        (s) => s.length === 101,
        30_000,
        "100 answers",
      );
      const texts = replies.slice(1).map((s) => s.text);
      expect(texts.filter((t) => t.startsWith("Started a fresh session"))).toHaveLength(1);
      expect(texts.filter((t) => t === "A fresh session was already started.")).toHaveLength(99);
      expect(await app.registry.listAll({ includeArchived: true })).toHaveLength(2);
    } finally {
      await app.stop();
    }
  });
});

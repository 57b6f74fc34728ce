import { afterEach, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/types.js";
import type { SessionError } from "../../src/session/errors.js";
import type { InEvent, OutEvent } from "../../src/runtime/events.js";
import { PROVIDERS } from "../support/db.js";
import { finals, makeRuntime, message, notices, privateChat, send, slowAgent, waitUntil, type TestRuntime } from "../support/runtime.js";

describe.each(PROVIDERS)("Runner on %s", (provider) => {
  let rt: TestRuntime;
  afterEach(async () => rt?.close());

  it("create refuses a taken id and leaves the existing session untouched; get is NotFound for unknown ids", async () => {
    rt = await makeRuntime(provider);
    const info = await rt.registry.resolveChatChannel(privateChat());
    const a = rt.runner.open(info);
    expect(() => rt.runner.create(info.id, rt.runner.newSession(info))).toThrow(expect.objectContaining({ code: "AlreadyExists" }));
    expect(rt.runner.get(info.id)).toBe(a);
    expect(() => rt.runner.get("nope")).toThrow(expect.objectContaining({ code: "NotFound" }));
  });

  it("keeps at most maxLiveSessions in memory: the least recently used idle ones close, a busy one stays, a closed one reopens with its history", async () => {
    rt = await makeRuntime(provider, { maxLiveSessions: 10, agent: slowAgent(["slow"], 300) });
    const busy = privateChat();
    const running = await send(rt, busy, message(busy, "hold on"));
    const convs = Array.from({ length: 30 }, () => privateChat());
    for (const c of convs) rt.runner.open(await rt.registry.resolveChatChannel(c));
    expect(rt.runner.size).toBeLessThanOrEqual(11);
    const busyInfo = await rt.registry.resolveChatChannel(busy);
    expect(rt.runner.has(busyInfo.id)).toBe(true);
    const last = await rt.registry.resolveChatChannel(convs.at(-1)!);
    expect(rt.runner.has(last.id)).toBe(true);
    await running.done;
    const first = await rt.registry.resolveChatChannel(convs[0]!);
    expect(rt.runner.has(first.id)).toBe(false);
    // The busy chat's session was kept while its turn ran; it answers and its history is intact after eviction and reopening.
    rt.runner.evictIdle(0);
    expect(rt.runner.has(busyInfo.id)).toBe(false);
    expect((await rt.runner.open(busyInfo).window()).map((m) => m.content)).toEqual(["hold on", "slow"]);
  });

  it("answers with the echo agent, appending the transcript with increasing seq and bumping turns", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    for (const text of ["one", "two", "three"]) await (await send(rt, conv, message(conv, text))).done;
    expect(finals(rt.events)).toEqual(["echo: one", "echo: two", "echo: three"]);
    const info = await rt.registry.resolveChatChannel(conv);
    expect(info.turnCount).toBe(3);
    const rows = await rt.transcript.recent(info.id, 100);
    expect(rows.map((r) => [r.seq, r.role, r.content])).toEqual([
      [1, "user", "one"],
      [2, "assistant", "echo: one"],
      [3, "user", "two"],
      [4, "assistant", "echo: two"],
      [5, "user", "three"],
      [6, "assistant", "echo: three"],
    ]);
  });

  it("gives the agent the history window and the persona's system prompt", async () => {
    const seen: Array<{ system: string; messages: string[] }> = [];
    const agent: Agent = {
      name: "spy",
      async *run(req) {
        seen.push({ system: req.system, messages: req.messages.map((m) => `${m.role}:${m.content}`) });
        yield { type: "done", text: "ok", toolRounds: 0 };
      },
    };
    rt = await makeRuntime(provider, { agent, context: { maxMessages: 3, maxChars: 10_000 } });
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "a"))).done;
    const s = rt.runner.open(await rt.registry.resolveChatChannel(conv));
    await s.setPersona("pirate");
    await (await send(rt, conv, message(conv, "b"))).done;
    await (await send(rt, conv, message(conv, "c"))).done;
    expect(seen[0]!.messages).toEqual(["user:a"]);
    expect(seen[1]!.system).toContain("pirate");
    expect(seen[2]!.messages).toEqual(
      ["user:b", "assistant:ok", "user:c"].slice(-4).length ? ["assistant:ok", "user:b", "assistant:ok", "user:c"].slice(-4) : [],
    );
  });

  it("builds the agent for every turn from the session's metadata", async () => {
    const built: Array<Record<string, unknown>> = [];
    rt = await makeRuntime(provider, {
      agent: (metadata) => {
        built.push({ ...metadata });
        return {
          name: "m",
          async *run() {
            yield { type: "done", text: String(metadata["model.name"] ?? "default"), toolRounds: 0 };
          },
        };
      },
    });
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "x"))).done;
    await (await send(rt, conv, message(conv, "/model tiny-1"))).done;
    await (await send(rt, conv, message(conv, "y"))).done;
    expect(built.map((m) => m["model.name"])).toEqual([undefined, "tiny-1"]);
    expect(finals(rt.events)).toEqual(["default", "tiny-1"]);
  });

  it("runs the middleware in order: next() passes the event (or a changed one) on, not calling it consumes, notices carry a severity", async () => {
    rt = await makeRuntime(provider, { commands: false });
    const order: string[] = [];
    let given: object | undefined;
    rt.runner.register(async (_ev, ctx, next) => {
      order.push("first");
      given = ctx;
      await next();
    });
    rt.runner.register((ev, ctx, next) => {
      order.push("second");
      if (ev.text === "swap") return next({ ...ev, text: "swapped" });
      if (ev.text === "eat") {
        ctx.notify("warn", "eaten");
        return;
      }
      return next();
    });
    rt.runner.register((ev, _ctx, next) => {
      order.push(`third: ${ev.text}`);
      return next();
    });
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "swap"))).done;
    expect(order).toEqual(["first", "second", "third: swapped"]);
    // Capabilities over the conversation, never the Runner.
    expect(Object.keys(given!).sort()).toEqual(["can", "notify", "session"]);
    expect(finals(rt.events)).toEqual(["echo: swapped"]);
    order.length = 0;
    const h = await send(rt, conv, message(conv, "eat"));
    expect(h.accepted).toBe("consumed");
    expect(order).toEqual(["first", "second"]);
    expect(rt.events.filter((e) => e.kind === "notice")).toEqual([expect.objectContaining({ severity: "warn", text: "eaten" })]);
    order.length = 0;
    await (await send(rt, conv, message(conv, "pass"))).done;
    expect(order).toEqual(["first", "second", "third: pass"]);
  });

  it("processes a session's events one at a time, in arrival order", async () => {
    rt = await makeRuntime(provider, { agent: slowAgent(["x"], 5) });
    const conv = privateChat();
    const info = await rt.registry.resolveChatChannel(conv);
    const s = rt.runner.open(info);
    const handles = await Promise.all(Array.from({ length: 20 }, (_, i) => rt.runner.run(s, message(conv, `m${i}`))));
    await Promise.all(handles.map((h) => h.done));
    const rows = await rt.transcript.recent(info.id, 100);
    expect(rows.filter((r) => r.role === "user").map((r) => r.content)).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
  });

  it("busy policy collect merges messages that arrive during a turn into one follow-up turn", async () => {
    const received: string[] = [];
    const base = slowAgent(["ok"], 80);
    rt = await makeRuntime(provider, {
      busyPolicy: "collect",
      agent: { name: "c", run: (req) => (received.push(req.messages.at(-1)!.content), base.run(req)) },
    });
    const conv = privateChat();
    const s = rt.runner.open(await rt.registry.resolveChatChannel(conv));
    const first = await rt.runner.run(s, message(conv, "first"));
    await waitUntil(() => received.length === 1);
    const later = await Promise.all(["a", "b", "c"].map((t) => rt.runner.run(s, message(conv, t))));
    expect(later.map((h) => h.accepted)).toEqual(["collected", "collected", "collected"]);
    await Promise.all([first.done, ...later.map((h) => h.done)]);
    expect(received).toEqual(["first", "a\n\nb\n\nc"]);
  });

  it("busy policy interrupt aborts the running turn for the new message", async () => {
    rt = await makeRuntime(provider, { busyPolicy: "interrupt", agent: slowAgent(["part1 ", "part2"], 100) });
    const conv = privateChat();
    const s = rt.runner.open(await rt.registry.resolveChatChannel(conv));
    const first = await rt.runner.run(s, message(conv, "first"));
    await new Promise((r) => setTimeout(r, 30));
    const second = await rt.runner.run(s, message(conv, "second"));
    expect(await first.done).toBe("fenced");
    expect(await second.done).toBe("answered");
    expect(finals(rt.events)).toEqual(["part1 part2"]);
  });

  it("/stop aborts the running turn and drops the queued messages", async () => {
    rt = await makeRuntime(provider, { agent: slowAgent(["a", "b", "c", "d"], 60) });
    const conv = privateChat();
    const s = rt.runner.open(await rt.registry.resolveChatChannel(conv));
    const running = await rt.runner.run(s, message(conv, "long"));
    const q1 = await rt.runner.run(s, message(conv, "queued 1"));
    const q2 = await rt.runner.run(s, message(conv, "queued 2"));
    await waitUntil(() => rt.events.some((e) => e.kind === "text-delta"));
    await rt.runner.run(s, message(conv, "/stop"));
    expect(await running.done).toBe("fenced");
    expect(await q1.done).toBe("dropped");
    expect(await q2.done).toBe("dropped");
    expect(notices(rt.events)).toContain("Stopped. Dropped 2 queued messages.");
    expect(finals(rt.events)).toEqual([]);
    await (await rt.runner.run(s, message(conv, "after"))).done;
    expect(finals(rt.events)).toEqual(["abcd"]);
  });

  it("run fencing: a slow streaming agent rotated mid-turn leaks 0 characters into the new session", async () => {
    const streamed: string[] = [];
    rt = await makeRuntime(provider, { agent: slowAgent(["OLD-1 ", "OLD-2 ", "OLD-3 ", "OLD-4 ", "OLD-5"], 50, (c) => streamed.push(c)) });
    const conv = privateChat();
    const old = await rt.registry.resolveChatChannel(conv);
    const s = rt.runner.open(old);
    const turn = await rt.runner.run(s, message(conv, "tell me a long story"));
    await waitUntil(() => streamed.length >= 2);
    // The conversation is rotated while the run streams (by an operator, another process, or a switch).
    const r = await rt.registry.rotateChannel({ ...conv, expectedSessionId: old.id });
    rt.runner.handoff(s, r.current, "rotated");
    expect(await turn.done).toBe("fenced");
    await new Promise((res) => setTimeout(res, 300)); // the agent would have kept streaming by now
    const current = await rt.registry.resolveChatChannel(conv);
    expect(current.id).toBe(r.current.id);
    const newEvents = rt.events.filter((e) => e.sessionId === current.id);
    const leaked = newEvents.flatMap((e) => ("text" in e ? [e.text] : "delta" in e ? [e.delta] : [])).join("");
    expect(leaked).not.toContain("OLD");
    expect((await rt.transcript.recent(current.id, 100)).map((m) => m.content).join("")).not.toContain("OLD");
    expect((await rt.transcript.recent(old.id, 100)).map((m) => m.content).join("")).not.toContain("OLD");
    const afterRotation = rt.events.slice(rt.events.findIndex((e) => e.kind === "lifecycle" && e.phase === "rotated"));
    expect(afterRotation.some((e) => (e.kind === "text-delta" || e.kind === "text-final") && e.text.includes("OLD"))).toBe(false);
    expect(finals(rt.events)).toEqual([]);
  });

  it("/new sent while a turn runs waits for it: the earlier message is answered in the old session first", async () => {
    rt = await makeRuntime(provider, { agent: slowAgent(["part one, ", "part two"], 60) });
    const conv = privateChat();
    const old = await rt.registry.resolveChatChannel(conv);
    const s = rt.runner.open(old);
    const turn = await rt.runner.run(s, message(conv, "question"));
    await waitUntil(() => rt.events.some((e) => e.kind === "text-delta"));
    await rt.runner.run(s, message(conv, "/new"));
    expect(await turn.done).toBe("answered");
    expect(finals(rt.events)).toEqual(["part one, part two"]);
    expect((await rt.transcript.recent(old.id, 10)).map((m) => m.content)).toEqual(["question", "part one, part two"]);
    const order = rt.events.filter((e) => e.kind === "text-final" || e.kind === "notice").map((e) => (e.kind === "notice" ? "notice" : "final"));
    expect(order).toEqual(["final", "notice"]);
    expect((await rt.registry.resolveChatChannel(conv)).parentId).toBe(old.id);
  });

  it("a message for a rotated session goes to the conversation's current session", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    const old = await rt.registry.resolveChatChannel(conv);
    const s = rt.runner.open(old);
    await rt.runner.run(s, message(conv, "/new"));
    const h = await rt.runner.run(s, message(conv, "hello again"));
    expect(h.sessionId).not.toBe(old.id);
    await h.done;
    expect((await rt.transcript.recent(h.sessionId, 10)).map((r) => r.content)).toEqual(["hello again", "echo: hello again"]);
    expect(await rt.transcript.count(old.id)).toBe(0);
  });

  it("records an unaddressed group message as context without answering", async () => {
    rt = await makeRuntime(provider);
    const g = await rt.identities.groupId("telegram", `-100${Date.now()}`);
    const conv = { agentId: "bot", userId: g, groupId: g, channel: "telegram:bot:group:-1" };
    const h = await send(rt, conv, message(conv, "just chatting", { respond: false }));
    expect(h.accepted).toBe("context");
    await (await send(rt, conv, message(conv, "@bot what did I say?"))).done;
    const rows = await rt.transcript.recent(h.sessionId, 10);
    expect(rows.map((r) => r.content)).toEqual(["just chatting", "@bot what did I say?", "echo: @bot what did I say?"]);
    expect(finals(rt.events)).toEqual(["echo: @bot what did I say?"]);
  });

  it("a failing agent gets a clear error notice and the next message works", async () => {
    let calls = 0;
    rt = await makeRuntime(provider, {
      agent: {
        name: "flaky",
        async *run() {
          if (++calls === 1) throw new Error("upstream exploded");
          yield { type: "done", text: "fine now", toolRounds: 0 };
        },
      },
    });
    const conv = privateChat();
    expect(await (await send(rt, conv, message(conv, "a"))).done).toBe("failed");
    expect(notices(rt.events)[0]).toMatch(/^Sorry, I couldn.t answer that \(ref [0-9a-f]{6}\)\. Please try again\.$/);
    expect(await (await send(rt, conv, message(conv, "b"))).done).toBe("answered");
    expect(finals(rt.events)).toEqual(["fine now"]);
  });

  it("a hanging agent is stopped by the turn timeout with an error notice", async () => {
    rt = await makeRuntime(provider, { turnTimeoutMs: 200, agent: slowAgent(["never"], 60_000) });
    const conv = privateChat();
    expect(await (await send(rt, conv, message(conv, "hello?"))).done).toBe("failed");
    expect(notices(rt.events).join("\n")).toMatch(/did not answer within/);
  });

  it("close() abandons running turns (nothing committed: the event is replayed at the next start) and rejects new events with Closed", async () => {
    rt = await makeRuntime(provider, { agent: slowAgent(["a", "b"], 200) });
    const conv = privateChat();
    const s = rt.runner.open(await rt.registry.resolveChatChannel(conv));
    const h = await rt.runner.run(s, message(conv, "x"));
    await rt.runner.close();
    await rt.runner.close();
    expect(await h.done).toBe("abandoned");
    // A shutdown is not /stop: the user's message is not recorded as handled without an answer.
    expect(await rt.transcript.recent(s.id, 10)).toEqual([]);
    const e: unknown = await rt.runner.run(s, message(conv, "y") as InEvent).catch((x: unknown) => x);
    expect((e as SessionError).code).toBe("Closed");
  });

  it("drain(grace) lets the running turn finish and starts no queued one; close() leaves the queued event uncommitted", async () => {
    rt = await makeRuntime(provider, { agent: slowAgent(["a", "b"], 100) });
    const conv = privateChat();
    const s = rt.runner.open(await rt.registry.resolveChatChannel(conv));
    const first = await rt.runner.run(s, message(conv, "x"));
    const queued = await rt.runner.run(s, message(conv, "y"));
    expect(await rt.runner.drain(10_000)).toEqual({ running: 0 });
    expect(await first.done).toBe("answered");
    const e: unknown = await rt.runner.run(s, message(conv, "z") as InEvent).catch((x: unknown) => x);
    expect((e as SessionError).code).toBe("Closed");
    await rt.runner.close();
    expect(await queued.done).toBe("dropped");
    expect((await rt.transcript.recent(s.id, 10)).map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("delivers events through sinks registered with withSink, filtered by kind, with an idempotent remover", async () => {
    rt = await makeRuntime(provider);
    const finalsOnly: OutEvent[] = [];
    const remove = rt.runner.withSink(["text-final"], (_id, e) => void finalsOnly.push(e));
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "hi"))).done;
    remove();
    remove();
    await (await send(rt, conv, message(conv, "again"))).done;
    expect(finalsOnly.map((e) => e.kind)).toEqual(["text-final"]);
    expect(finalsOnly[0]).toMatchObject({ text: "echo: hi", replyTo: { chatId: conv.chatId } });
  });
});

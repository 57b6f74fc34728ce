/**
 * "Which session is this conversation on" has one answer in a process: the
 * binding, cached by the runner's one map of conversations to sessions. An
 * event taken for a session the conversation has left (rotated by /new,
 * switched away from by /resume, a live copy closed by a handoff) reaches
 * the session that map names, however many times the conversation moved.
 */
import { afterEach, describe, expect, it } from "vitest";
import { CurrentSessions } from "../../src/runtime/current-sessions.js";
import { finals, makeRuntime, message, privateChat, type TestRuntime } from "../support/runtime.js";

describe("the current session of a conversation", () => {
  let rt: TestRuntime | undefined;
  afterEach(async () => {
    await rt?.close();
    rt = undefined;
  });

  it("after /new and a /resume back, an event taken for either session it left reaches the session the binding names; the stats hold one map", async () => {
    rt = await makeRuntime("sqlite");
    const conv = privateChat();
    const a = await rt.registry.resolveChatChannel(conv);
    const firstA = rt.runner.open(a);
    await (await rt.runner.run(firstA, message(conv, "/new"))).done;
    const b = await rt.registry.resolveChatChannel(conv);
    expect(b.id).not.toBe(a.id);
    await (await rt.runner.run(rt.runner.open(b), message(conv, `/resume ${a.id}`))).done;
    expect((await rt.registry.resolveChatChannel(conv)).id).toBe(a.id);

    // B as it was read before the switch (not archived yet): a copy of its row, opened live again.
    const toB = await rt.runner.run(rt.runner.open(b), message(conv, "for b"));
    expect(toB.sessionId).toBe(a.id);
    expect(await toB.done).toBe("answered");
    // A's first live copy, closed when /new moved the conversation away.
    expect(firstA.closed).toBe(true);
    const toFirstA = await rt.runner.run(firstA, message(conv, "for the first a"));
    expect(toFirstA.sessionId).toBe(a.id);
    expect(await toFirstA.done).toBe("answered");

    expect((await rt.transcript.recent(a.id, 10)).map((r) => r.content)).toEqual(["for b", "echo: for b", "for the first a", "echo: for the first a"]);
    expect(await rt.transcript.count(b.id)).toBe(0);
    const answers = rt.events.filter((e) => e.kind === "text-final");
    expect(answers.map((e) => [e.sessionId, e.kind === "text-final" && e.text])).toEqual([
      [a.id, "echo: for b"],
      [a.id, "echo: for the first a"],
    ]);
    expect(finals(rt.events)).toHaveLength(2);
    // One record of where the conversation is: its binding's entry, no second map of retired sessions.
    const stats = rt.runner.stats();
    expect(stats.bindings).toBe(1);
    expect(stats).not.toHaveProperty("retired");
  });
});

describe("CurrentSessions, the one cache of it", () => {
  it("past its bound it forgets the entry written longest ago: a conversation just handed off stays, however old it is", () => {
    const current = new CurrentSessions(3);
    current.set("moved", "a");
    current.set("k1", "x");
    current.set("k2", "y");
    // A handoff writes the conversation's new session: the entry is the newest now.
    current.set("moved", "b");
    current.set("k3", "z");
    expect(current.size).toBe(3);
    expect(current.get("moved")).toBe("b");
    expect(current.get("k1")).toBeUndefined();
    expect([current.get("k2"), current.get("k3")]).toEqual(["y", "z"]);
  });
});

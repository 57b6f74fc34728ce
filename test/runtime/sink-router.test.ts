import { describe, expect, it } from "vitest";
import type { OutEvent } from "../../src/runtime/events.js";
import { SinkRouter } from "../../src/runtime/sink-router.js";

const notice: OutEvent = { kind: "notice", sessionId: "s", severity: "info", text: "hi" };
const typing: OutEvent = { kind: "typing", sessionId: "s", replyTo: { platform: "t", botId: "b", chatId: "c" } };

describe("SinkRouter", () => {
  it("filters by kind; no kinds means all", async () => {
    const r = new SinkRouter();
    const onlyNotices: string[] = [];
    const all: string[] = [];
    r.add(["notice"], (_s, e) => void onlyNotices.push(e.kind));
    r.add([], (_s, e) => void all.push(e.kind));
    await r.deliver("s", notice);
    await r.deliver("s", typing);
    expect(onlyNotices).toEqual(["notice"]);
    expect(all).toEqual(["notice", "typing"]);
  });

  it("returns an idempotent remover", async () => {
    const r = new SinkRouter();
    const seen: string[] = [];
    r.add([], () => void seen.push("a"));
    const remove = r.add([], () => void seen.push("b"));
    remove();
    remove();
    expect(r.size).toBe(1);
    await r.deliver("s", notice);
    expect(seen).toEqual(["a"]);
  });

  it("isolates a sink that throws or rejects, logs it, and still runs the others", async () => {
    const logged: Array<Record<string, unknown>> = [];
    const r = new SinkRouter({ error: ((o: Record<string, unknown>) => void logged.push(o)) as never });
    const seen: string[] = [];
    r.add([], () => {
      throw new Error("boom");
    });
    r.add([], async () => {
      throw new Error("async boom");
    });
    r.add([], () => void seen.push("ok"));
    await expect(r.deliver("s", notice)).resolves.toBeUndefined();
    expect(seen).toEqual(["ok"]);
    expect(logged).toHaveLength(2);
    expect(logged[0]).toMatchObject({ sessionId: "s", kind: "notice" });
  });
});

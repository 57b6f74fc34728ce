import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionError } from "../../src/session/errors.js";
import type { OutEvent } from "../../src/runtime/events.js";
import { PROVIDERS } from "../support/db.js";
import { makeRuntime, message, privateChat, type TestRuntime } from "../support/runtime.js";

describe.each(PROVIDERS)("LiveSession on %s", (provider) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await makeRuntime(provider);
  });
  afterAll(async () => rt.close());

  it("setMetadata persists the value and emits a properties event", async () => {
    const conv = privateChat();
    const s = rt.runner.open(await rt.registry.resolveChatChannel(conv));
    const sub = s.subscribe("properties");
    await s.setMetadata("model.name", "gpt-x");
    const { value } = await sub.next();
    expect(value).toMatchObject({ kind: "properties", key: "model.name", value: "gpt-x" });
    expect((await rt.registry.getUnscoped(s.id)).metadata).toEqual({ "model.name": "gpt-x" });
  });

  it("subscribe is live only (no replay) and filters by kind; no kinds means everything", async () => {
    const s = rt.runner.open(await rt.registry.resolveChatChannel(privateChat()));
    s.emit({ kind: "notice", sessionId: s.id, severity: "info", text: "before" });
    const notices = s.subscribe("notice");
    const all = s.subscribe();
    s.emit({ kind: "typing", sessionId: s.id, replyTo: { platform: "t", botId: "b", chatId: "c" } });
    s.emit({ kind: "notice", sessionId: s.id, severity: "info", text: "after" });
    s.close();
    const got: OutEvent[] = [];
    for await (const e of notices) got.push(e);
    expect(got.map((e) => (e.kind === "notice" ? e.text : e.kind))).toEqual(["after"]);
    const everything: string[] = [];
    for await (const e of all) everything.push(e.kind);
    expect(everything).toEqual(["typing", "notice", "lifecycle"]);
  });

  it("close is idempotent; afterwards subscribe returns a closed stream and run fails with a typed error", async () => {
    const conv = privateChat();
    const s = rt.runner.open(await rt.registry.resolveChatChannel(conv));
    s.close();
    s.close();
    const sub = s.subscribe();
    expect(sub.closed).toBe(true);
    expect((await sub.next()).done).toBe(true);
    const err = await rt.runner.run(s, message(conv, "hi")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SessionError);
    expect((err as SessionError).code).toBe("Closed");
    await expect(s.setMetadata("k", 1)).rejects.toMatchObject({ code: "Closed" });
  });
});

/**
 * Details of the domain that mutations used to survive: canonical group ids,
 * why a session ended, legacy-id adoption, the last-active bump on persist,
 * and per-key metadata writes from two stale copies of one session.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatBinding } from "../../src/session/binding-key.js";
import { Registry, SessionError } from "../../src/session/index.js";
import { validate } from "../../src/session/info.js";
import { LiveSession } from "../../src/runtime/live-session.js";
import { SessionStore, TranscriptStore, TurnStore } from "../../src/store/index.js";
import { PROVIDERS, openTestDb, type TestDb } from "../support/db.js";

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => (e instanceof SessionError ? e.code : `not a SessionError: ${String(e)}`),
  );
}

describe.each(PROVIDERS)("session details on %s", (provider) => {
  let t: TestDb;
  let registry: Registry;
  let store: SessionStore;
  let transcript: TranscriptStore;
  const agentId = "bot";
  beforeAll(async () => {
    t = await openTestDb(provider);
    store = new SessionStore(t.db);
    registry = new Registry(store);
    transcript = new TranscriptStore(t.db);
  });
  afterAll(async () => t.close());
  const dm = (u: string = randomUUID(), chat = "1") => ({ agentId, userId: u, channel: `telegram:${agentId}:dm:${chat}` });
  const group = (g: string = randomUUID()) => ({ agentId, userId: g, groupId: g, channel: `telegram:${agentId}:group:-100${g.slice(0, 4)}` });

  it("a group id is valid only in its canonical lower-case form", async () => {
    const g = randomUUID();
    const upper = g.toUpperCase();
    expect(() => chatBinding(group(upper))).toThrow(/canonical UUID, in lower case/);
    expect(await codeOf(registry.resolveChatChannel(group(upper)))).toBe("Invalid");
    const s = await registry.resolveChatChannel(group(g));
    expect(() => validate({ ...s, groupId: upper, userId: upper })).toThrow(/groupId must be the group's canonical UUID, in lower case/);
    // The lower-case id is one scope; the upper-case spelling never reached another.
    expect((await registry.listAll({ userId: upper, includeArchived: true })).length).toBe(0);
  });

  it("a session's end records its reason, and its successor links back to it", async () => {
    const c = dm();
    const first = await registry.resolveChatChannel(c);
    const reset = await registry.rotateChannel({ ...c, expectedSessionId: first.id, reason: "reset" });
    expect(reset.previous).toMatchObject({ id: first.id, archived: true, endReason: "reset" });
    expect(reset.current.parentId).toBe(first.id);
    expect(reset.current.endReason).toBeUndefined();
    const viaNew = await registry.rotateChannel({ ...c, expectedSessionId: reset.current.id, reason: "new" });
    expect(viaNew.previous?.endReason).toBe("new");
    const back = await registry.switchChannel({ ...c, targetId: first.id, expectedSessionId: viaNew.current.id });
    expect(back.previous).toMatchObject({ id: viaNew.current.id, endReason: "resume" });
    // Resumed: active again, its old end forgotten.
    expect(back.current).toMatchObject({ id: first.id, archived: false });
    expect(back.current.endReason).toBeUndefined();
    const byOperator = await registry.rotateBound(first.id);
    expect(byOperator.previous?.endReason).toBe("rotate");
    const archived = await registry.archive({ userId: c.userId, agentId }, byOperator.current.id);
    expect(archived.endReason).toBe("archive");
    // The archived binding is repaired on the next resolve, and says so.
    const repaired = await registry.resolveChatChannel(c);
    expect(repaired.parentId).toBe(byOperator.current.id);
  });

  describe("legacy-id adoption", () => {
    it("adopts a legacy session on a miss and writes the binding", async () => {
      const c = dm(randomUUID(), "legacy");
      const legacy = await registry.ensure({ ...c, kind: "chat", createIfMissing: true });
      expect(await store.bindingsForSession(legacy.id)).toHaveLength(0);
      const adopted = await registry.resolveChatChannel({ ...c, legacyId: legacy.id });
      expect(adopted.id).toBe(legacy.id);
      const binding = await store.findBinding(chatBinding(c).key);
      expect(binding?.sessionId).toBe(legacy.id);
      expect((await store.bindingsForSession(legacy.id)).map((b) => b.key)).toEqual([chatBinding(c).key]);
      // Later messages, without the legacy id, land on it: the binding is durable.
      expect((await registry.resolveChatChannel(c)).id).toBe(legacy.id);
    });

    it("does not adopt a legacy session already bound elsewhere", async () => {
      const c = dm(randomUUID(), "legacy2");
      const legacy = await registry.ensure({ ...c, kind: "chat", createIfMissing: true });
      // Bound under another conversation's key (for instance a main binding that adopted it).
      const elsewhere = { ...chatBinding(c), key: `other|${randomUUID()}` };
      await store.bind(elsewhere, { adoptId: legacy.id });
      const resolved = await registry.resolveChatChannel({ ...c, legacyId: legacy.id });
      expect(resolved.id).not.toBe(legacy.id);
      expect((await store.bindingsForSession(legacy.id)).map((b) => b.key)).toEqual([elsewhere.key]);
      expect((await store.findBinding(chatBinding(c).key))?.sessionId).toBe(resolved.id);
    });
  });

  describe("the last-active bump on persist", () => {
    const old = new Date("2020-01-01T00:00:00Z");
    it("appending to the transcript bumps lastActive", async () => {
      const s = await registry.resolveChatChannel(dm());
      await registry.update(s.id, { lastActive: old });
      expect((await registry.getUnscoped(s.id)).lastActive.getTime()).toBe(old.getTime());
      const before = Date.now();
      await transcript.append(s.id, [{ role: "user", content: "hi" }]);
      expect((await registry.getUnscoped(s.id)).lastActive.getTime()).toBeGreaterThanOrEqual(before - 5);
    });

    it("a committed turn bumps lastActive (the gateway's commit)", async () => {
      const s = await registry.resolveChatChannel(dm());
      await registry.update(s.id, { lastActive: old });
      const before = Date.now();
      await new TurnStore(t.db).commit({
        sessionId: s.id,
        inboundIds: [],
        messages: [{ role: "user", content: "hi" }],
        turnIncrement: 1,
        deliveries: [],
        ttlMs: 60_000,
      });
      const after = await registry.getUnscoped(s.id);
      expect(after.lastActive.getTime()).toBeGreaterThanOrEqual(before - 5);
      expect(after.turnCount).toBe(1);
    });
  });

  it("metadata is written per key: two stale copies of one session lose nothing", async () => {
    const info = await registry.resolveChatChannel(dm());
    // Two processes' live copies, both opened before either setting.
    const a = new LiveSession(info, { registry, transcript });
    const b = new LiveSession(info, { registry, transcript });
    await a.setMetadata("model.name", "big-model");
    await b.setMetadata("model.temperature", 0.2);
    await a.setMetadata("model.thinking_level", "high");
    await b.setMetadata("model.name", undefined);
    await b.setMetadata("model.name", "small.model");
    expect((await registry.getUnscoped(info.id)).metadata).toEqual({ "model.name": "small.model", "model.temperature": 0.2, "model.thinking_level": "high" });
    await a.reload();
    expect(a.metadata).toEqual({ "model.name": "small.model", "model.temperature": 0.2, "model.thinking_level": "high" });
    // An archived session takes no settings.
    await registry.rotateChannel({ ...dm(info.userId), expectedSessionId: info.id });
    expect(await codeOf(b.setMetadata("model.name", "x"))).toBe("Archived");
  });
});

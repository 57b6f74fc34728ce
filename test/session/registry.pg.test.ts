import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BINDING_AGENT_KEY, bindingAgentIdOf } from "../../src/session/agent-id.js";
import { chatKeyOf } from "../../src/session/binding-key.js";
import { Registry, SessionError, type Info } from "../../src/session/index.js";
import { IdentityStore, SessionStore, TranscriptStore } from "../../src/store/index.js";
import { PROVIDERS, openTestDb, type TestDb } from "../support/db.js";

async function expectCode(p: Promise<unknown>, code: string): Promise<SessionError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, `expected ${code}`).toBeInstanceOf(SessionError);
  expect((e as SessionError).code).toBe(code);
  return e as SessionError;
}

describe.each(PROVIDERS)("registry on %s", (provider) => {
  let t: TestDb;
  let registry: Registry;
  let transcript: TranscriptStore;
  let identities: IdentityStore;
  const agentId = "bot-1";

  beforeAll(async () => {
    t = await openTestDb(provider);
    registry = new Registry(new SessionStore(t.db));
    transcript = new TranscriptStore(t.db);
    identities = new IdentityStore(t.db);
  });
  afterAll(async () => t.close());

  const user = () => randomUUID();
  const dm = (u: string, chat = "100") => ({ agentId, userId: u, channel: `telegram:${agentId}:dm:${chat}` });

  describe("ensure", () => {
    it("returns an existing exact id, checking kind and owner", async () => {
      const u = user();
      const created = await registry.ensure({ agentId, userId: u, channel: "c", kind: "task", createIfMissing: true });
      const again = await registry.ensure({ id: created.id, agentId, userId: u, channel: "c", kind: "task", requireKind: "task" });
      expect(again.id).toBe(created.id);
      await expectCode(registry.ensure({ id: created.id, agentId, userId: u, channel: "c", kind: "chat", requireKind: "chat" }), "WrongKind");
      await expectCode(registry.ensure({ id: created.id, agentId, userId: user(), channel: "c", kind: "task" }), "Forbidden");
      await expectCode(registry.ensure({ id: created.id, agentId: "other-bot", userId: u, channel: "c", kind: "task" }), "Forbidden");
    });

    it("creates a missing exact id only with allowExactIdCreate", async () => {
      const u = user();
      const id = `custom-${randomUUID()}`;
      await expectCode(registry.ensure({ id, agentId, userId: u, channel: "c", kind: "task" }), "NotFound");
      const made = await registry.ensure({ id, agentId, userId: u, channel: "c", kind: "task", allowExactIdCreate: true });
      expect(made.id).toBe(id);
      expect(made.kind).toBe("task");
    });

    it("generates a new id with createIfMissing, and is NotFound otherwise", async () => {
      const u = user();
      const a = await registry.ensure({ agentId, userId: u, channel: "c", kind: "chat", createIfMissing: true });
      const b = await registry.ensure({ agentId, userId: u, channel: "c", kind: "chat", createIfMissing: true });
      expect(a.id).not.toBe(b.id);
      expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
      await expectCode(registry.ensure({ agentId, userId: u, channel: "c", kind: "chat" }), "NotFound");
    });

    it("fails closed on invalid input", async () => {
      await expectCode(registry.ensure({ agentId: "", userId: user(), channel: "c", kind: "chat", createIfMissing: true }), "Invalid");
      await expectCode(registry.ensure({ agentId, userId: "", channel: "c", kind: "chat", createIfMissing: true }), "Invalid");
      await expectCode(registry.ensure({ agentId, userId: user(), channel: "c", kind: "bogus" as never, createIfMissing: true }), "Invalid");
      const g = randomUUID();
      await expectCode(registry.ensure({ agentId, userId: user(), groupId: g, channel: "c", kind: "chat", createIfMissing: true }), "Invalid");
    });
  });

  describe("get, list, archive", () => {
    it("get is scope-checked", async () => {
      const u = user();
      const s = await registry.resolveChatChannel(dm(u));
      expect((await registry.get({ userId: u, agentId }, s.id)).id).toBe(s.id);
      await expectCode(registry.get({ userId: user(), agentId }, s.id), "Forbidden");
      await expectCode(registry.get({ userId: u, agentId: "bot-2" }, s.id), "Forbidden");
      await expectCode(registry.get({ userId: u, agentId }, randomUUID()), "NotFound");
    });

    it("lists by kinds, archive state, internal kinds and project, most recent first, with limit and offset", async () => {
      const u = user();
      const mk = async (kind: Info["kind"], projectId?: string) => {
        const s = await registry.ensure({ agentId, userId: u, channel: "c", kind, projectId, createIfMissing: true });
        await new Promise((r) => setTimeout(r, 5));
        await registry.update(s.id, { lastActive: new Date() });
        return s;
      };
      const chat = await mk("chat");
      const task = await mk("task", "p1");
      const delegate = await mk("delegate");
      const main = await mk("main", "p1");
      const scope = { userId: u, agentId };
      expect((await registry.list(scope)).map((s) => s.id)).toEqual([main.id, delegate.id, task.id, chat.id]);
      expect((await registry.list(scope, { kinds: ["chat", "main"] })).map((s) => s.id)).toEqual([main.id, chat.id]);
      expect((await registry.list(scope, { excludeInternal: true })).map((s) => s.id)).toEqual([main.id, chat.id]);
      expect((await registry.list(scope, { projectId: "p1" })).map((s) => s.id)).toEqual([main.id, task.id]);
      expect((await registry.list(scope, { limit: 2, offset: 1 })).map((s) => s.id)).toEqual([delegate.id, task.id]);
      await registry.archive(scope, chat.id);
      expect((await registry.list(scope)).map((s) => s.id)).not.toContain(chat.id);
      expect((await registry.list(scope, { includeArchived: true })).map((s) => s.id)).toContain(chat.id);
      expect(await registry.list({ userId: user(), agentId })).toEqual([]);
    });

    it("archive makes a session read-only: every later write fails with Archived", async () => {
      const u = user();
      const s = await registry.ensure({ agentId, userId: u, channel: "c", kind: "chat", createIfMissing: true });
      const archived = await registry.archive({ userId: u, agentId }, s.id);
      expect(archived.archived).toBe(true);
      await expectCode(registry.update(s.id, { title: "x" }), "Archived");
      await expectCode(registry.update(s.id, { metadata: { a: 1 } }), "Archived");
      expect((await transcript.append(s.id, [{ role: "user", content: "late" }])).status).toBe("archived");
      expect(await transcript.count(s.id)).toBe(0);
      await expectCode(registry.archive({ userId: user(), agentId }, s.id), "Forbidden");
    });
  });

  describe("listForReview", () => {
    it("excludes delegate, task and scheduler by default and carries latestSeq", async () => {
      const reviewAgent = `review-${randomUUID()}`;
      const u = user();
      const chat = await registry.resolveChatChannel({ agentId: reviewAgent, userId: u, channel: `telegram:${reviewAgent}:dm:1` });
      for (const kind of ["task", "delegate", "scheduler"] as const) {
        await registry.ensure({ agentId: reviewAgent, userId: u, channel: "x", kind, createIfMissing: true });
      }
      await transcript.append(chat.id, [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
        { role: "user", content: "c" },
      ]);
      const items = await registry.listForReview({ agentId: reviewAgent });
      expect(items.map((i) => i.id)).toEqual([chat.id]);
      expect(items[0]!.latestSeq).toBe(3);
      expect((await registry.listForReview({ agentId: reviewAgent, kinds: ["task"] })).map((i) => i.kind)).toEqual(["task"]);
    });

    it("requirePrivateMain keeps only sessions on private user channels", async () => {
      const reviewAgent = `review-${randomUUID()}`;
      const g = await identities.groupId("telegram", `-100${Date.now()}`);
      const priv = await registry.resolveChatChannel({ agentId: reviewAgent, userId: user(), channel: `telegram:${reviewAgent}:dm:7` });
      await registry.resolveChatChannel({ agentId: reviewAgent, userId: g, groupId: g, channel: `telegram:${reviewAgent}:group:1` });
      const all = await registry.listForReview({ agentId: reviewAgent });
      expect(all).toHaveLength(2);
      const only = await registry.listForReview({ agentId: reviewAgent, requirePrivateMain: true });
      expect(only.map((i) => i.id)).toEqual([priv.id]);
    });
  });

  describe("resolveChatChannel", () => {
    it("binds a private chat on user + agent + channel, and is stable", async () => {
      const u = user();
      const a = await registry.resolveChatChannel(dm(u, "1"));
      const again = await registry.resolveChatChannel(dm(u, "1"));
      const otherChannel = await registry.resolveChatChannel(dm(u, "2"));
      const otherAgent = await registry.resolveChatChannel({ ...dm(u, "1"), agentId: "bot-2" });
      expect(again.id).toBe(a.id);
      expect(new Set([a.id, otherChannel.id, otherAgent.id]).size).toBe(3);
      expect(a.kind).toBe("chat");
      expect(a.userId).toBe(u);
      expect(a.groupId).toBeUndefined();
    });

    it("binds a group on group + agent: every member and reply channel shares it", async () => {
      const g = await identities.groupId("discord", `guild-chan-${randomUUID()}`);
      const a = await registry.resolveChatChannel({ agentId, userId: g, groupId: g, channel: "discord:bot-1:group:1" });
      const b = await registry.resolveChatChannel({ agentId, userId: g, groupId: g, channel: "discord:bot-1:group:1:thread:9" });
      expect(b.id).toBe(a.id);
      expect(a.userId).toBe(g);
      expect(a.groupId).toBe(g);
    });

    it("refuses a group whose owner is not the group", async () => {
      const g = await identities.groupId("discord", `x-${randomUUID()}`);
      await expectCode(registry.resolveChatChannel({ agentId, userId: user(), groupId: g, channel: "c" }), "Invalid");
      await expectCode(registry.resolveChatChannel({ agentId, userId: "not-a-uuid", groupId: "not-a-uuid", channel: "c" }), "Invalid");
    });

    it("never uses a derived key as the session id", async () => {
      const u = user();
      const s = await registry.resolveChatChannel(dm(u, "chat-xyz"));
      expect(s.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(s.id).not.toBe(u);
      expect(s.id).not.toContain("xyz");
    });

    it("adopts a still-valid legacy session on a miss, and ignores an invalid one", async () => {
      const u = user();
      const legacy = await registry.ensure({ ...dm(u, "9"), kind: "chat", createIfMissing: true });
      const adopted = await registry.resolveChatChannel({ ...dm(u, "9"), legacyId: legacy.id });
      expect(adopted.id).toBe(legacy.id);

      const u2 = user();
      const wrongChannel = await registry.ensure({ ...dm(u2, "other"), kind: "chat", createIfMissing: true });
      const fresh = await registry.resolveChatChannel({ ...dm(u2, "9"), legacyId: wrongChannel.id });
      expect(fresh.id).not.toBe(wrongChannel.id);

      const u3 = user();
      const archived = await registry.ensure({ ...dm(u3, "9"), kind: "chat", createIfMissing: true });
      await registry.archive({ userId: u3, agentId }, archived.id);
      const fresh3 = await registry.resolveChatChannel({ ...dm(u3, "9"), legacyId: archived.id });
      expect(fresh3.id).not.toBe(archived.id);

      const stranger = await registry.ensure({ ...dm(user(), "9"), kind: "chat", createIfMissing: true });
      const u4 = user();
      expect((await registry.resolveChatChannel({ ...dm(u4, "9"), legacyId: stranger.id })).id).not.toBe(stranger.id);
    });

    it("keeps a binding pointing at an active session even if its session was archived out of band", async () => {
      const u = user();
      const s = await registry.resolveChatChannel(dm(u, "arch"));
      await registry.archive({ userId: u, agentId }, s.id);
      const next = await registry.resolveChatChannel(dm(u, "arch"));
      expect(next.id).not.toBe(s.id);
      expect(next.archived).toBe(false);
      expect(next.parentId).toBe(s.id);
    });
  });

  describe("rotateChannel", () => {
    it("archives the current session and links the successor, in one step", async () => {
      const u = user();
      const first = await registry.resolveChatChannel(dm(u, "r1"));
      await registry.update(first.id, { metadata: { "model.name": "m1" }, persona: "pirate" });
      const r = await registry.rotateChannel({ ...dm(u, "r1"), expectedSessionId: first.id });
      expect(r.previous?.id).toBe(first.id);
      expect(r.previous?.archived).toBe(true);
      expect(r.current.parentId).toBe(first.id);
      expect(r.current.archived).toBe(false);
      expect(r.current.metadata).toEqual({ "model.name": "m1" });
      expect(r.current.persona).toBe("pirate");
      expect((await registry.resolveChatChannel(dm(u, "r1"))).id).toBe(r.current.id);
      expect((await registry.get({ userId: u, agentId }, first.id)).archived).toBe(true);
    });

    it("onto another agent (/agent): the binding keeps its key, the successor records it and starts with its own settings; /new keeps the agent; /resume reaches both", async () => {
      const u = user();
      const c = dm(u, "ag");
      const first = await registry.resolveChatChannel(c);
      await registry.update(first.id, { metadata: { "model.name": "m1" }, persona: "pirate" });
      const chosen = `${agentId}~support`;
      const r = await registry.rotateChannel({ ...c, expectedSessionId: first.id, successorAgentId: chosen });
      expect(r.current.agentId).toBe(chosen);
      expect(r.current.metadata).toEqual({ [BINDING_AGENT_KEY]: agentId });
      expect(r.current.persona).toBeUndefined();
      expect(bindingAgentIdOf(r.current)).toBe(agentId);
      expect(chatKeyOf(r.current)).toBe(registry.bindingKey(c));
      expect((await registry.resolveChatChannel(c)).id).toBe(r.current.id);
      // /new keeps the chosen agent (and its marker).
      await registry.update(r.current.id, { metadata: { ...r.current.metadata, "model.name": "m2" } });
      const again = await registry.rotateChannel({ ...c, expectedSessionId: r.current.id });
      expect([again.current.agentId, again.current.metadata]).toEqual([chosen, { [BINDING_AGENT_KEY]: agentId, "model.name": "m2" }]);
      // Back to the binding's own agent: the marker goes.
      const back = await registry.rotateChannel({ ...c, expectedSessionId: again.current.id, successorAgentId: agentId });
      expect([back.current.agentId, back.current.metadata]).toEqual([agentId, {}]);
      // /resume switches to a session of either agent in this conversation.
      const resumed = await registry.switchChannel({ ...c, targetId: r.current.id, expectedSessionId: back.current.id });
      expect(resumed.current.id).toBe(r.current.id);
    });

    it("is compare-and-rotate: a stale expectation changes nothing", async () => {
      const u = user();
      const first = await registry.resolveChatChannel(dm(u, "r2"));
      const r = await registry.rotateChannel({ ...dm(u, "r2"), expectedSessionId: first.id });
      const before = await registry.list({ userId: u, agentId }, { includeArchived: true });
      await expectCode(registry.rotateChannel({ ...dm(u, "r2"), expectedSessionId: first.id }), "StaleRotation");
      const after = await registry.list({ userId: u, agentId }, { includeArchived: true });
      expect(after.map((s) => s.id).sort()).toEqual(before.map((s) => s.id).sort());
      expect((await registry.resolveChatChannel(dm(u, "r2"))).id).toBe(r.current.id);
    });

    it("with no expectation rotates whatever is current; with a binding missing it creates one", async () => {
      const u = user();
      const r0 = await registry.rotateChannel(dm(u, "r3"));
      expect(r0.previous).toBeUndefined();
      const r1 = await registry.rotateChannel(dm(u, "r3"));
      expect(r1.previous?.id).toBe(r0.current.id);
      await expectCode(registry.rotateChannel({ ...dm(u, "never-bound"), expectedSessionId: randomUUID() }), "StaleRotation");
    });

    it("sets a persona on the new session when asked", async () => {
      const u = user();
      const s = await registry.resolveChatChannel(dm(u, "p"));
      const r = await registry.rotateChannel({ ...dm(u, "p"), expectedSessionId: s.id, persona: "coach" });
      expect(r.current.persona).toBe("coach");
    });
  });

  describe("main sessions", () => {
    it("returns the bound main, promotes the latest candidate, creates when asked, else NotFound", async () => {
      const u = user();
      const req = { agentId, userId: u, channel: `console:${agentId}:dm:${u}` };
      await expectCode(registry.resolveMain(req), "NotFound");
      const older = await registry.ensure({ ...req, kind: "main", createIfMissing: true });
      await new Promise((r) => setTimeout(r, 5));
      const newer = await registry.ensure({ ...req, kind: "main", createIfMissing: true });
      await registry.update(newer.id, { lastActive: new Date() });
      const promoted = await registry.resolveMain(req);
      expect(promoted.id).toBe(newer.id);
      expect(promoted.id).not.toBe(older.id);
      expect((await registry.resolveMain(req)).id).toBe(newer.id);

      const u2 = user();
      const made = await registry.resolveMain({ agentId, userId: u2, channel: "console:x:dm:y", createIfMissing: true });
      expect(made.kind).toBe("main");
    });

    it("rotateMain with no main session simply creates one, then rotates compare-and-rotate", async () => {
      const u = user();
      const req = { agentId, userId: u, channel: `console:${agentId}:dm:${u}` };
      const r0 = await registry.rotateMain(req);
      expect(r0.previous).toBeUndefined();
      expect(r0.current.kind).toBe("main");
      const r1 = await registry.rotateMain({ ...req, expectedSessionId: r0.current.id });
      expect(r1.previous?.id).toBe(r0.current.id);
      expect(r1.current.parentId).toBe(r0.current.id);
      await expectCode(registry.rotateMain({ ...req, expectedSessionId: r0.current.id }), "StaleRotation");
    });
  });

  describe("verifyRotation", () => {
    it("classifies Committed, NotExecuted and Uncertain", async () => {
      const expected = randomUUID();
      expect(await registry.verifyRotation(expected, async () => ({ id: randomUUID() }))).toBe("Committed");
      expect(await registry.verifyRotation(expected, async () => ({ id: expected }))).toBe("NotExecuted");
      expect(
        await registry.verifyRotation(expected, async () => {
          throw new Error("db down");
        }),
      ).toBe("Uncertain");
      expect(await registry.verifyRotation(expected, async () => null)).toBe("Uncertain");
      expect(await registry.verifyRotation(expected, async () => ({ id: "" }))).toBe("Uncertain");
    });
  });

  describe("switchChannel (resume)", () => {
    it("switches to an earlier session of the same chat, never another chat's", async () => {
      const u = user();
      const first = await registry.resolveChatChannel(dm(u, "sw"));
      const r = await registry.rotateChannel({ ...dm(u, "sw"), expectedSessionId: first.id });
      const back = await registry.switchChannel({ ...dm(u, "sw"), targetId: first.id, expectedSessionId: r.current.id });
      expect(back.current.id).toBe(first.id);
      expect(back.current.archived).toBe(false);
      expect((await registry.resolveChatChannel(dm(u, "sw"))).id).toBe(first.id);
      const other = await registry.resolveChatChannel(dm(u, "other-chat"));
      await expectCode(registry.switchChannel({ ...dm(u, "sw"), targetId: other.id, expectedSessionId: first.id }), "NotFound");
      const stranger = await registry.resolveChatChannel(dm(user(), "sw"));
      await expectCode(registry.switchChannel({ ...dm(u, "sw"), targetId: stranger.id, expectedSessionId: first.id }), "NotFound");
      await expectCode(registry.switchChannel({ ...dm(u, "sw"), targetId: "00000000-0000-4000-8000-000000000000", expectedSessionId: first.id }), "NotFound");
    });
  });
});

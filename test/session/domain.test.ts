import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SessionError, fromRecord, memoryScope, record, validate, type Info } from "../../src/session/index.js";
import type { SessionRecord } from "../../src/store/index.js";

function info(over: Partial<Info> = {}): Info {
  const now = new Date();
  return {
    id: randomUUID(),
    agentId: "bot",
    userId: randomUUID(),
    channel: "telegram:bot:dm:1",
    kind: "chat",
    metadata: {},
    turnCount: 0,
    createdAt: now,
    lastActive: now,
    archived: false,
    ...over,
  };
}

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof SessionError ? e.code : `not a SessionError: ${String(e)}`;
  }
  return undefined;
}

describe("Info validation fails closed", () => {
  it("accepts a valid private and group session", () => {
    expect(validate(info())).toBeTruthy();
    const g = randomUUID();
    expect(validate(info({ userId: g, groupId: g }))).toBeTruthy();
  });

  it.each([
    ["no id", { id: "" }],
    ["no agent", { agentId: "" }],
    ["no owner", { userId: "" }],
    ["unknown kind", { kind: "weird" as never }],
    ["no channel", { channel: "" }],
    ["group not owned by the group", { groupId: randomUUID() }],
    ["group id not canonical", { userId: "g1", groupId: "g1" }],
    ["bad metadata", { metadata: [] as never }],
    ["negative turns", { turnCount: -1 }],
    ["invalid date", { createdAt: new Date("nope") }],
  ])("rejects %s", (_name, over) => {
    expect(code(() => validate(info(over as Partial<Info>)))).toBe("Invalid");
  });

  it("record and fromRecord round-trip, and fromRecord rejects malformed rows", () => {
    const i = info({ title: "t", persona: "p", metadata: { "model.name": "x" }, parentId: randomUUID() });
    const rec = record(i);
    expect(fromRecord(rec)).toEqual(i);
    expect(code(() => fromRecord({ ...rec, metadata: "{not json" }))).toBe("Invalid");
    expect(code(() => fromRecord({ ...rec, kind: "bogus" }))).toBe("Invalid");
    expect(code(() => fromRecord({ ...rec, userId: "" } as SessionRecord))).toBe("Invalid");
    expect(code(() => record({ ...i, agentId: "" }))).toBe("Invalid");
  });
});

describe("memoryScope", () => {
  it("gives a private session one partition for read, write and compaction", () => {
    const i = info();
    const s = memoryScope(i);
    expect(s.kind).toBe("private");
    expect(s.read).toBe(s.write);
    expect(s.compact()).toBe(s.read);
    expect(s.read).toContain(i.userId);
  });

  it("gives a group one shared scope, whichever of its sessions asks, and rejects compaction", () => {
    const g = randomUUID();
    const a = memoryScope(info({ userId: g, groupId: g }));
    const b = memoryScope(info({ userId: g, groupId: g, channel: "other" }));
    expect(a.kind).toBe("group");
    expect(a.read).toBe(a.write);
    expect(b.read).toBe(a.read);
    expect(code(() => a.compact())).toBe("Forbidden");
  });

  it("separates users, groups and agents", () => {
    const g = randomUUID();
    const scopes = [memoryScope(info()), memoryScope(info()), memoryScope(info({ userId: g, groupId: g })), memoryScope(info({ agentId: "other" }))];
    expect(new Set(scopes.map((s) => s.read)).size).toBe(4);
  });

  it("fails closed on an invalid Info", () => {
    expect(code(() => memoryScope(info({ userId: "" })))).toBe("Invalid");
    expect(code(() => memoryScope(info({ groupId: randomUUID() })))).toBe("Invalid");
  });
});

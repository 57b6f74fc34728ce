import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry, SessionError } from "../../src/session/index.js";
import { SessionStore } from "../../src/store/index.js";
import { PROVIDERS, openTestDb, type TestDb } from "../support/db.js";

describe.each(PROVIDERS)("a lost commit acknowledgement on %s", (provider) => {
  let t: TestDb;
  let registry: Registry;
  let fault: "none" | "after-commit" | "before-commit" = "none";
  beforeAll(async () => {
    t = await openTestDb(provider, {
      faults: {
        afterCommit: (op) => {
          if (op === "rotate" && fault === "after-commit") throw new Error("connection reset while reading COMMIT reply");
        },
        beforeCommit: (op) => {
          if (op === "rotate" && fault === "before-commit") throw new Error("connection reset while sending COMMIT");
        },
      },
    });
    registry = new Registry(new SessionStore(t.db));
  });
  afterAll(async () => t.close());

  const chat = () => ({ agentId: "bot", userId: randomUUID(), channel: "slack:T1:bot:dm:D1" });

  async function rotateWithFault(c: ReturnType<typeof chat>, expected: string, kind: typeof fault) {
    fault = kind;
    try {
      return await registry.rotateChannel({ ...c, expectedSessionId: expected }).then(
        () => undefined,
        (e: unknown) => e,
      );
    } finally {
      fault = "none";
    }
  }

  it("reports RotationOutcomeUnknown, and verifyRotation says Committed when the commit landed", async () => {
    const c = chat();
    const first = await registry.resolveChatChannel(c);
    const e = await rotateWithFault(c, first.id, "after-commit");
    expect(e).toBeInstanceOf(SessionError);
    expect((e as SessionError).code).toBe("RotationOutcomeUnknown");
    const verdict = await registry.verifyRotation(first.id, () => registry.peekChatChannel(c));
    expect(verdict).toBe("Committed");
    const now = await registry.resolveChatChannel(c);
    expect(now.parentId).toBe(first.id);
  });

  it("reports RotationOutcomeUnknown, and verifyRotation says NotExecuted when the commit never landed", async () => {
    const c = chat();
    const first = await registry.resolveChatChannel(c);
    const e = await rotateWithFault(c, first.id, "before-commit");
    expect((e as SessionError).code).toBe("RotationOutcomeUnknown");
    expect(await registry.verifyRotation(first.id, () => registry.peekChatChannel(c))).toBe("NotExecuted");
    const all = await registry.list({ userId: c.userId, agentId: c.agentId }, { includeArchived: true });
    expect(all.map((s) => s.id)).toEqual([first.id]);
    expect(all[0]!.archived).toBe(false);
  });

  it("verifyRotation says Uncertain when the re-read fails or finds nothing", async () => {
    const c = chat();
    const first = await registry.resolveChatChannel(c);
    expect(
      await registry.verifyRotation(first.id, async () => {
        throw new Error("still down");
      }),
    ).toBe("Uncertain");
    expect(await registry.verifyRotation(first.id, () => registry.peekChatChannel({ ...c, channel: "never-bound" }))).toBe("Uncertain");
  });
});

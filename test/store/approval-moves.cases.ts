import { expect, it } from "vitest";
import { ApprovalStore, toolGrantKey, type NewApproval } from "../../src/store/approvals.js";
import { KvStore } from "../../src/store/kv.js";
import type { TestDb, TestProvider } from "../support/db.js";

const OLD = "-4001";
const NEW = "-1009001";

function approval(id: string, chatId: string, extra: Partial<NewApproval> = {}): NewApproval {
  return {
    id,
    sessionId: "s1",
    platform: "telegram",
    botId: "77",
    chatId,
    replyTo: JSON.stringify({ platform: "telegram", botId: "77", chatId, replyToMessageId: "5", kind: "group" }),
    requesterId: "101",
    requesterName: "Ann",
    privateChat: false,
    tool: "current_time",
    server: null,
    arguments: "{}",
    owner: "p",
    expiresAt: new Date(Date.now() + 3_600_000),
    ...extra,
  };
}

/**
 * A group's move to a new chat id (a Telegram supergroup upgrade) on a real database of `provider`:
 * its pending approvals and its "Always" grants (the chat's, a requester's, a topic's) go with it, in
 * one transaction; decided approvals and other chats' grants stay; a grant the new id has is kept;
 * a second move (Telegram announces it twice, an update is redelivered) changes nothing.
 */
export function approvalMoveCases(provider: TestProvider, open: () => Promise<TestDb>): void {
  it(`moves a group's pending approvals and its grants to its new chat id, once (${provider})`, async () => {
    const t = await open();
    try {
      const store = new ApprovalStore(t.db);
      const kv = new KvStore(t.db);
      await store.create(approval("pend01", OLD));
      await store.create(approval("done01", OLD));
      await store.decide("done01", { status: "approved", byId: "101" });
      await store.create(approval("other1", "-4002"));
      await store.create(approval("slack1", OLD, { platform: "slack" }));
      const scope = { platform: "telegram", botId: "77", chatId: OLD, tool: "current_time" };
      await kv.set(toolGrantKey(scope), "1");
      await kv.set(toolGrantKey(scope, "101"), "1");
      await kv.set(toolGrantKey({ ...scope, threadId: "9" }), "1");
      await kv.set(toolGrantKey({ ...scope, botId: "88", tool: "files__write" }), "1");
      // Not this group's: another chat whose id merely starts the same, another platform, another key family.
      await kv.set(toolGrantKey({ ...scope, chatId: `${OLD}0` }), "1");
      await kv.set(toolGrantKey({ ...scope, platform: "slack" }), "1");
      await kv.set(`telegram:commands:${OLD}:x`, "keep");

      expect(await store.moveChat("telegram", OLD, NEW)).toEqual({ approvals: 1, grants: 4 });

      const moved = await store.get("pend01");
      expect(moved?.chatId).toBe(NEW);
      expect(JSON.parse(moved!.replyTo)).toEqual({ platform: "telegram", botId: "77", chatId: NEW, replyToMessageId: "5", kind: "group" });
      expect((await store.get("done01"))?.chatId).toBe(OLD);
      expect((await store.get("other1"))?.chatId).toBe("-4002");
      expect((await store.get("slack1"))?.chatId).toBe(OLD);
      const at = { ...scope, chatId: NEW };
      expect(await kv.get(toolGrantKey(at))).toBe("1");
      expect(await kv.get(toolGrantKey(at, "101"))).toBe("1");
      expect(await kv.get(toolGrantKey({ ...at, threadId: "9" }))).toBe("1");
      expect(await kv.get(toolGrantKey({ ...at, botId: "88", tool: "files__write" }))).toBe("1");
      expect(await kv.get(toolGrantKey(scope))).toBeUndefined();
      expect(await kv.get(toolGrantKey(scope, "101"))).toBeUndefined();
      expect(await kv.get(toolGrantKey({ ...scope, chatId: `${OLD}0` }))).toBe("1");
      expect(await kv.get(toolGrantKey({ ...scope, platform: "slack" }))).toBe("1");
      expect(await kv.get(`telegram:commands:${OLD}:x`)).toBe("keep");

      // The second service message (migrate_from_chat_id after migrate_to_chat_id), or a redelivery: nothing left to move.
      expect(await store.moveChat("telegram", OLD, NEW)).toEqual({ approvals: 0, grants: 0 });
      expect((await store.get("pend01"))?.chatId).toBe(NEW);
      expect(await kv.get(toolGrantKey(at))).toBe("1");
    } finally {
      await t.close();
    }
  });

  it(`a grant the new chat id already has is kept, and the old one still leaves (${provider})`, async () => {
    const t = await open();
    try {
      const store = new ApprovalStore(t.db);
      const kv = new KvStore(t.db);
      const scope = { platform: "telegram", botId: "77", tool: "current_time" };
      await kv.set(toolGrantKey({ ...scope, chatId: OLD }), "old");
      await kv.set(toolGrantKey({ ...scope, chatId: NEW }), "new");
      expect(await store.moveChat("telegram", OLD, NEW)).toEqual({ approvals: 0, grants: 1 });
      expect(await kv.get(toolGrantKey({ ...scope, chatId: NEW }))).toBe("new");
      expect(await kv.get(toolGrantKey({ ...scope, chatId: OLD }))).toBeUndefined();
    } finally {
      await t.close();
    }
  });
}

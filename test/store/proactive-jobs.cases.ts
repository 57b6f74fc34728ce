import { expect, it } from "vitest";
import { JobStore } from "../../src/store/jobs.js";
import { MemoryStore } from "../../src/store/memories.js";
import { ApiMessageStore, ConversationAddressStore } from "../../src/store/proactive.js";
import type { TestDb, TestProvider } from "../support/db.js";

/**
 * The stores main added in the raw-SQL style, now built with Kysely: their
 * rows come back as the generated types (Dates, numbers) on a real database
 * of `provider`, conflicts resolve in the database, and a chat id is
 * matched literally (% and _ included).
 */
export function proactiveAndJobCases(provider: TestProvider, open: () => Promise<TestDb>): void {
  it(`conversation addresses: the upsert replaces binding and template, reads are typed (${provider})`, async () => {
    const t = await open();
    try {
      const s = new ConversationAddressStore(t.db);
      const base = { key: "k1", platform: "telegram", botId: "b1", chatId: "c1", threadId: "", bindingKey: "bind-a", template: "{}" };
      await s.upsert(base);
      await s.upsert({ ...base, bindingKey: "bind-b", template: '{"v":2}' });
      await s.upsert({ ...base, key: "k2", botId: "b2" });
      const all = await s.byChat("telegram", "c1", "");
      expect(all.map((r) => r.key).sort()).toEqual(["k1", "k2"]);
      const [one] = await s.byChat("telegram", "c1", "", "b1");
      expect(one).toMatchObject({ key: "k1", bindingKey: "bind-b", template: '{"v":2}' });
      expect(one!.updatedAt).toBeInstanceOf(Date);
      expect((await s.byBinding("bind-b"))?.key).toBe("k1");
      expect(await s.byBinding("none")).toBeUndefined();
    } finally {
      await t.close();
    }
  });

  it(`API messages: one record per key, its delivery's status typed (${provider})`, async () => {
    const t = await open();
    try {
      const s = new ApiMessageStore(t.db);
      const m = {
        principal: "p",
        idempotencyKey: "key-1",
        fingerprint: "f",
        mode: "send" as const,
        platform: "telegram",
        botId: "b",
        eventId: null,
        envelope: null,
      };
      const delivery = { address: { platform: "telegram", botId: "b", chatId: "c" }, text: "hi", expiresAt: new Date(Date.now() + 60_000) };
      const [a, b] = await Promise.all([s.accept(m, { delivery }), s.accept(m, { delivery })]);
      expect([a.created, b.created].sort()).toEqual([false, true]);
      expect(a.record.id).toBe(b.record.id);
      const st = await s.status(a.record.id);
      expect(st?.record.createdAt).toBeInstanceOf(Date);
      expect(st?.deliveries).toEqual([
        { id: a.record.deliveryId, status: "pending", platformMessageId: null, lastError: null, attempts: 0, part: 0, sentAt: null },
      ]);
    } finally {
      await t.close();
    }
  });

  it(`jobs: claim once, complete with a delivery, sending() reads the delivery's expiry as a Date, settle counts (${provider})`, async () => {
    const t = await open();
    try {
      const s = new JobStore(t.db);
      const due = new Date(Date.now() - 1000);
      const job = await s.insert({
        id: "j1",
        conversation: "conv",
        target: '{"agentId":"b","userId":"u","channel":"telegram:b:dm:c"}',
        address: '{"platform":"telegram","botId":"b","chatId":"c"}',
        platform: "telegram",
        botId: "b",
        kind: "once",
        spec: due.toISOString(),
        timezone: "UTC",
        action: "text",
        text: "job hi",
        status: "active",
        nextRunAt: due,
        createdBy: "u",
      });
      expect(job.failures).toBe(0);
      expect(job.nextRunAt?.getTime()).toBe(due.getTime());
      const now = new Date();
      const [claimed, again] = await Promise.all([s.claimDue("A", now, new Date(0), 10), s.claimDue("B", now, new Date(0), 10)]);
      expect(claimed.length + again.length).toBe(1);
      const owner = claimed.length ? "A" : "B";
      const mine = [...claimed, ...again][0]!;
      expect(mine.claimAttempts).toBe(1);
      const run = await s.startRun("r1", mine.id, due, owner);
      expect(run.dueAt.getTime()).toBe(due.getTime());
      const expiresAt = new Date(Date.now() + 60_000);
      expect(
        await s.complete(
          { job: mine, run, delivery: { id: "d1", sessionId: "", text: "job hi", expiresAt }, messages: [], status: "sending", next: null },
          "B-not-owner",
        ),
      ).toBe(false);
      expect(
        await s.complete(
          { job: mine, run, delivery: { id: "d1", sessionId: "", text: "job hi", expiresAt }, messages: [], status: "sending", next: null },
          owner,
        ),
      ).toBe(true);
      expect((await s.get("j1"))?.status).toBe("done");
      const [sending] = await s.sending();
      expect(sending).toMatchObject({ id: "r1", status: "sending", deliveryStatus: "pending", deliveryId: "d1" });
      expect(sending!.deliveryExpiresAt?.getTime()).toBe(expiresAt.getTime());
      expect(await s.settle("r1", "failed", "nope")).toMatchObject({ settled: true, failures: 1, paused: false, jobId: "j1" });
      expect(await s.settle("r1", "failed", "nope")).toMatchObject({ settled: false });
      expect(await s.runCounts()).toEqual({ failed: 1 });
      expect(await s.pruneRuns(new Date(), 10)).toBe(1);
    } finally {
      await t.close();
    }
  });

  it(`jobs: a chat's conversation is the one ConversationAddress recorded, its id matched literally (% and _ too) (${provider})`, async () => {
    const t = await open();
    try {
      const addresses = new ConversationAddressStore(t.db);
      const template = (chatId: string, chatKind = "group") => JSON.stringify({ chatKind, channel: "ch", replyTo: { platform: "slack", botId: "b", chatId } });
      const row = (chatId: string, threadId = "") => ({
        key: `slack:b:${chatId}:${threadId}`,
        platform: "slack",
        botId: "b",
        chatId,
        threadId,
        bindingKey: `bind-${chatId}`,
      });
      await addresses.upsert({ ...row("a_b%c"), replyChatId: "C1", template: template("C1") });
      // Later conversations whose ids match "a_b%c" only if _ and % were wildcards.
      for (let n = 0; n < 5; n++) await addresses.upsert({ ...row(`aZbW${n}c`), template: template(`aZbW${n}c`) });
      await addresses.upsert({ ...row("a_b%c", "t1"), template: template("C1", "thread") });
      const s = new JobStore(t.db);
      expect((await s.conversationsIn("slack", "a_b%c"))[0]).toMatchObject({
        chatId: "a_b%c",
        threadId: "",
        template: { chatKind: "group", replyTo: { chatId: "C1" } },
      });
      expect((await s.conversationsIn("slack", "C1"))[0]?.chatId).toBe("a_b%c"); // the id the platform's API takes
      expect((await s.conversationsIn("slack", "a_b%c", "t1"))[0]?.template.chatKind).toBe("thread");
      expect((await s.conversationsIn("slack", "aZbW3c"))[0]?.chatId).toBe("aZbW3c");
      expect(await s.conversationsIn("slack", "a_b")).toEqual([]);
      expect((await s.conversationOfBinding("bind-aZbW3c"))?.template.replyTo.chatId).toBe("aZbW3c");
      // An unreadable template is a StoreError naming the column, never a value cast into shape.
      await addresses.upsert({ ...row("bad"), template: '{"chatKind":"nope"}' });
      await expect(s.conversationsIn("slack", "bad")).rejects.toThrow(/ConversationAddress\.template of row slack:b:bad:/);
    } finally {
      await t.close();
    }
  });

  it(`memories: replace swaps a scope's set in one transaction, list reads it typed, other scopes untouched (${provider})`, async () => {
    const t = await open();
    try {
      const m = new MemoryStore(t.db);
      await m.add("s1", null, ["a", "b"]);
      await m.add("s2", null, ["other"]);
      await m.replace("s1", ["c"]);
      const listed = await m.list("s1");
      expect(listed.map((r) => r.content)).toEqual(["c"]);
      expect(listed[0]!.createdAt).toBeInstanceOf(Date);
      expect((await m.list("s2")).map((r) => r.content)).toEqual(["other"]);
      await m.replace("s1", []);
      expect(await m.list("s1")).toEqual([]);
    } finally {
      await t.close();
    }
  });
}

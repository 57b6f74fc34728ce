import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

let app: App | undefined;
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

describe("a job's conversation comes from ConversationAddress, the one place a conversation's address is kept", () => {
  it("after retention pruned the chat's events and replies, a job is still located by chat, by thread and by session", async () => {
    const adapter = new MemoryAdapter();
    ({ app } = await startApp("sqlite", [adapter], { GROUP_POLICY: "open", THREAD_SESSIONS: "own" }));
    const a = app;
    const say = async (env: ReturnType<MemoryAdapter["dm"]>, chat: string) => {
      const before = adapter.to(chat).length;
      await adapter.ctx.inbound(env);
      await eventually(
        () => adapter.to(chat),
        (s) => s.length > before,
        10_000,
        `a reply in ${chat}`,
      );
    };
    await say(adapter.dm("42", "hello"), "42");
    const thread = adapter.group("-100", "7", "in the thread", {
      chatKind: "thread",
      threadId: "t1",
      mentioned: true,
      replyTo: { platform: "telegram", botId: adapter.botId, chatId: "-100", threadId: "t1" },
    });
    await say(thread, "-100");
    // What RECORD_RETENTION deletes once handled and settled: nothing of the chats is left in the ledger's tables.
    await eventually(
      () => a.db.query("settled", a.db.q.selectFrom("OutboundDelivery").select("status").where("status", "<>", "sent")),
      (rows) => rows.length === 0,
      10_000,
      "replies settled",
    );
    await a.db.exec("prune-inbound", a.db.q.deleteFrom("InboundEvent"));
    await a.db.exec("prune-deliveries", a.db.q.deleteFrom("OutboundDelivery"));

    const dm = await a.jobs.service.locate({ platform: "telegram", chat: "42" });
    expect(dm.address).toEqual({ platform: "telegram", botId: adapter.botId, chatId: "42", kind: "private" });
    const session = await a.registry.store.findBinding(a.jobs.service.keyOf(dm.conversation));
    expect(session).toBeDefined(); // the coordinates are the ones the gateway bound the chat on

    const own = await a.jobs.service.locate({ platform: "telegram", chat: "-100", thread: "t1" });
    expect(own.address).toEqual({ platform: "telegram", botId: adapter.botId, chatId: "-100", threadId: "t1", kind: "group" });
    const threadBinding = await a.registry.store.findBinding(a.jobs.service.keyOf(own.conversation));
    expect(threadBinding).toBeDefined(); // the thread's own group (THREAD_SESSIONS=own), not the channel's

    const bySession = await a.jobs.service.locate({ sessionId: session!.sessionId });
    expect(bySession).toEqual(dm);
    await expect(a.jobs.service.locate({ platform: "telegram", chat: "-100" })).rejects.toThrow(/the bot has talked in/); // only its thread spoke
  });
});

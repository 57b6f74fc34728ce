import pg from "pg";
import { describe, expect, it } from "vitest";
import { ConversationAddressStore } from "../../src/store/proactive.js";
import { openTestDb } from "../support/db.js";
import { proactiveAndJobCases } from "./proactive-jobs.cases.js";

describe("conversation addresses, API messages and jobs on PostgreSQL", () => {
  proactiveAndJobCases("postgresql", () => openTestDb("postgresql"));

  it("a read by binding waits for that binding's address being written (a first turn's schedule_message finds its chat)", async () => {
    const t = await openTestDb("postgresql");
    // Another connection holds the row's key, so the gateway's upsert cannot commit until it lets go.
    const blocker = new pg.Client({ connectionString: t.url });
    await blocker.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query(
        `INSERT INTO "ConversationAddress" ("key", "platform", "botId", "chatId", "threadId", "bindingKey", "template", "updatedAt") VALUES ('k-race', 'telegram', 'b', 'c', '', 'other', '{}', now())`,
      );
      const s = new ConversationAddressStore(t.db);
      const write = s.upsert({ key: "k-race", platform: "telegram", botId: "b", chatId: "c", threadId: "", bindingKey: "bind-race", template: '{"v":1}' });
      const read = s.byBinding("bind-race");
      // Without the wait the read has long returned nothing by now; with it, it is still waiting for the write.
      await new Promise((r) => setTimeout(r, 100));
      await blocker.query("ROLLBACK");
      await write;
      expect((await read)?.key).toBe("k-race");
    } finally {
      await blocker.end();
      await t.close();
    }
  });
});

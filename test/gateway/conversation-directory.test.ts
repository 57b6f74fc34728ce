import { afterEach, describe, expect, it } from "vitest";
import { ConversationDirectory } from "../../src/gateway/proactive/directory.js";
import { silentLogger } from "../../src/log.js";
import { Registry } from "../../src/session/registry.js";
import { ConversationAddressStore } from "../../src/store/proactive.js";
import { SessionStore } from "../../src/store/sessions.js";
import { eventually } from "../support/app.js";
import { openTestDb, type TestDb } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

let t: TestDb | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe("the conversation directory writes an address once, and again when it changes", () => {
  it("remembers what it wrote by digest: the same address is not written again, a changed one is", async () => {
    t = await openTestDb("sqlite");
    const db = t.db;
    const store = new ConversationAddressStore(db);
    const errors: string[] = [];
    const directory = new ConversationDirectory(store, new Registry(new SessionStore(db)), silentLogger, (w) => errors.push(w));
    const adapter = new MemoryAdapter();
    const rows = () => store.byChat("telegram", "42", "");
    const forget = () => db.exec("forget", db.q.deleteFrom("ConversationAddress"));

    directory.seen(adapter.dm("42", "hello", { senderName: "Ada" }), "binding-42");
    await eventually(rows, (r) => r.length === 1, 10_000, "the address written");
    // Deleted behind its back: the same address again is known, so nothing is written (the next
    // chat's first message, written after it, shows the write would have been done by then).
    await forget();
    directory.seen(adapter.dm("42", "again", { senderName: "Ada" }), "binding-42");
    directory.seen(adapter.dm("43", "hi"), "binding-43");
    await eventually(
      () => store.byChat("telegram", "43", ""),
      (r) => r.length === 1,
      10_000,
      "the next chat's address written",
    );
    expect(await rows()).toEqual([]);
    // A changed address (the sender renamed) is written.
    directory.seen(adapter.dm("42", "renamed", { senderName: "Ada L." }), "binding-42");
    const [row] = await eventually(rows, (r) => r.length === 1, 10_000, "the changed address written");
    expect(row?.template).toContain("Ada L.");
    expect(row?.bindingKey).toBe("binding-42");
    expect(errors).toEqual([]);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { GatewayLedger } from "../../src/gateway/ledger.js";
import { DeliveryStore, InboundStore, TurnStore } from "../../src/store/index.js";
import { openTestDb, type TestDb } from "../support/db.js";

const address = { platform: "telegram", botId: "b", chatId: "42", threadId: "7", kind: "group" as const };

describe("the committed delivery is a value", () => {
  let t: TestDb | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("the ledger returns the rows as written, address typed, expiring a TTL after the inbound event happened", async () => {
    t = await openTestDb("sqlite");
    const inbound = new InboundStore(t.db);
    const deliveries = new DeliveryStore(t.db);
    const ledger = new GatewayLedger(new TurnStore(t.db, deliveries), 3_600_000);
    // Recorded half an hour ago: its reply has half an hour left, not a whole TTL from the commit.
    const occurredAt = new Date(Date.now() - 1_800_000);
    const rec = await inbound.record({ platform: "telegram", botId: "b", eventId: "e1", envelope: "{}", occurredAt });
    const inboundId = (rec as { id: string }).id;
    const r = await ledger.commit({
      sessionId: "",
      inboundIds: [inboundId],
      messages: [],
      turnIncrement: 0,
      replies: [
        { replyTo: address, text: "one", kind: "reply" },
        { replyTo: address, text: "two", kind: "notice" },
      ],
    });
    expect(r.deliveries).toMatchObject([
      { inboundId, address, part: 0, text: "one", status: "pending", expiresAt: new Date(occurredAt.getTime() + 3_600_000) },
      { inboundId, address, part: 1, text: "two", status: "pending", expiresAt: new Date(occurredAt.getTime() + 3_600_000) },
    ]);
    // The sender takes what was written without a read back, and a read back is the same typed row.
    expect(await deliveries.take(r.deliveries[0]!.id)).toBe(r.deliveries[0]);
    expect(await deliveries.find(r.deliveries[1]!.id)).toEqual(r.deliveries[1]);
    // The commit landed once: a retry writes nothing and returns no rows.
    expect(
      await ledger.commit({
        sessionId: "",
        inboundIds: [inboundId],
        messages: [],
        turnIncrement: 0,
        replies: [{ replyTo: address, text: "again", kind: "reply" }],
      }),
    ).toEqual({
      transcript: "duplicate",
      deliveries: [],
    });
  });
});

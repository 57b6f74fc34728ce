import { afterEach, describe, expect, it } from "vitest";
import { GatewayLedger } from "../../src/gateway/ledger.js";
import { codecs } from "../../src/store/codecs.js";
import { DeliveryStore, InboundStore, StoreError, TurnStore } from "../../src/store/index.js";
import { openTestDb, type TestDb } from "../support/db.js";

const address = { platform: "telegram", botId: "b", chatId: "42", threadId: "7", kind: "group" as const };

const unreadable = (table: string) => expect.objectContaining({ name: "StoreError", code: "Unreadable", message: expect.stringContaining(table) });

describe("one codec per JSON column", () => {
  it("decodes what it encodes, and the envelope's date comes back a Date (the one reviver)", () => {
    expect(codecs.deliveryAddress.decode(codecs.deliveryAddress.encode(address))).toEqual(address);
    const occurredAt = new Date("2026-03-04T05:06:07.089Z");
    const env = {
      platform: "slack" as const,
      botId: "b",
      chatKind: "private" as const,
      chatId: "T/D1",
      senderId: "u",
      text: "hi",
      mentioned: true,
      eventId: "e",
      occurredAt,
      replyTo: { platform: "slack" as const, botId: "b", chatId: "D1", extra: { team: "T" } },
      channel: "slack:b:dm:D1",
    };
    const back = codecs.inboundEnvelope.decode(codecs.inboundEnvelope.encode(env));
    expect(back).toEqual(env);
    expect(back.occurredAt).toBeInstanceOf(Date);
  });

  it("a value that is not JSON, or not what its column holds, is a StoreError naming the table, column and row", () => {
    expect(() => codecs.deliveryAddress.decode("{not json", "d1")).toThrow(StoreError);
    expect(() => codecs.deliveryAddress.decode("{not json", "d1")).toThrow(/OutboundDelivery\.address of row d1 is not JSON/);
    expect(() => codecs.jobTarget.decode('{"agentId":"a"}', "j1")).toThrow(/ScheduledJob\.target of row j1 does not hold .*userId/);
    expect(() => codecs.inboundEnvelope.decode(JSON.stringify({ platform: "irc" }))).toThrow(/InboundEvent\.envelope/);
    expect(() => codecs.conversationTemplate.decode("[]")).toThrow(/ConversationAddress\.template/);
  });
});

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

  it("a delivery row whose address is unreadable is a StoreError naming OutboundDelivery.address, for recovery and for a read", async () => {
    t = await openTestDb("sqlite");
    const deliveries = new DeliveryStore(t.db);
    const [row] = (
      await new TurnStore(t.db, deliveries).commit({
        sessionId: "",
        inboundIds: [],
        messages: [],
        turnIncrement: 0,
        deliveries: [{ address, text: "x" }],
        ttlMs: 60_000,
      })
    ).deliveries;
    await t.db.exec("corrupt", t.db.q.updateTable("OutboundDelivery").set({ address: '{"chatId":1}' }).where("id", "=", row!.id));
    await expect(deliveries.find(row!.id)).rejects.toEqual(unreadable("OutboundDelivery.address"));
    await expect(deliveries.unsent()).rejects.toEqual(unreadable(`OutboundDelivery.address of row ${row!.id}`));
  });
});

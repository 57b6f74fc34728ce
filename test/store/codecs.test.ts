import { afterEach, describe, expect, it } from "vitest";
import { codecs } from "../../src/store/codecs.js";
import { DeliveryStore, StoreError, TurnStore } from "../../src/store/index.js";
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

describe("a delivery row is read through its codec", () => {
  let t: TestDb | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
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

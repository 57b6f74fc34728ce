import { randomUUID } from "node:crypto";
import type { Database } from "./db.js";
import type { DeliveryRecord } from "./deliveries.js";
import { toDate, type Sql } from "./sql.js";

/** A conversation's durable address (the ConversationAddress table). */
export interface ConversationAddressRecord {
  key: string;
  platform: string;
  botId: string;
  chatId: string;
  threadId: string;
  bindingKey: string;
  template: string;
  updatedAt: Date;
}

const ADDRESS_COLUMNS = `"key","platform","botId","chatId","threadId","bindingKey","template","updatedAt"`;
const addressOf = (r: Record<string, unknown>): ConversationAddressRecord => ({
  ...(r as unknown as ConversationAddressRecord),
  updatedAt: toDate(r.updatedAt),
});

/**
 * Where each conversation can be reached. Written when the gateway first
 * handles a message of a conversation (and when its address changes), read
 * by the proactive paths: the HTTP API and hooks.
 */
export class ConversationAddressStore {
  constructor(readonly db: Database) {}

  async upsert(r: Omit<ConversationAddressRecord, "updatedAt">): Promise<void> {
    await this.db.exec(
      "conversation-address-upsert",
      `INSERT INTO "ConversationAddress" (${ADDRESS_COLUMNS}) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT ("key") DO UPDATE SET "bindingKey" = excluded."bindingKey", "template" = excluded."template", "updatedAt" = excluded."updatedAt"`,
      [r.key, r.platform, r.botId, r.chatId, r.threadId, r.bindingKey, r.template, new Date()],
    );
  }

  /** The conversations with this chat (and thread) id on a platform, most recent first (several bots may share a chat). */
  async byChat(platform: string, chatId: string, threadId: string, botId?: string): Promise<ConversationAddressRecord[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      "conversation-address-by-chat",
      `SELECT ${ADDRESS_COLUMNS} FROM "ConversationAddress" WHERE "platform" = ? AND "chatId" = ? AND "threadId" = ?${botId === undefined ? "" : ` AND "botId" = ?`} ORDER BY "updatedAt" DESC LIMIT 10`,
      botId === undefined ? [platform, chatId, threadId] : [platform, chatId, threadId, botId],
    );
    return rows.map(addressOf);
  }

  /** The most recently used address of a binding (a thread sharing its channel's session has several). */
  async byBinding(bindingKey: string): Promise<ConversationAddressRecord | undefined> {
    const [r] = await this.db.query<Record<string, unknown>>(
      "conversation-address-by-binding",
      `SELECT ${ADDRESS_COLUMNS} FROM "ConversationAddress" WHERE "bindingKey" = ? ORDER BY "updatedAt" DESC LIMIT 1`,
      [bindingKey],
    );
    return r ? addressOf(r) : undefined;
  }
}

/** One accepted POST /api/v1/messages (the ApiMessage table). */
export interface ApiMessageRecord {
  id: string;
  principal: string;
  idempotencyKey: string;
  fingerprint: string;
  mode: "send" | "agent";
  platform: string;
  botId: string;
  deliveryId: string | null;
  eventId: string | null;
  envelope: string | null;
  createdAt: Date;
}

const API_COLUMNS = `"id","principal","idempotencyKey","fingerprint","mode","platform","botId","deliveryId","eventId","envelope","createdAt"`;
const apiOf = (r: Record<string, unknown>): ApiMessageRecord => ({ ...(r as unknown as ApiMessageRecord), createdAt: toDate(r.createdAt) });

export type NewApiMessage = Omit<ApiMessageRecord, "id" | "createdAt" | "deliveryId">;

export interface SendParts {
  /** The delivery to write with the record (mode send). */
  delivery?: { address: string; text: string; expiresAt: Date };
  /** The conversation's current session: the text is appended to its transcript as the bot's message. */
  sessionId?: string;
}

/** What accept() found: this request recorded now, or the one recorded earlier under the same key. */
export type Accepted = { created: true; record: ApiMessageRecord; delivery?: DeliveryRecord } | { created: false; record: ApiMessageRecord };

export interface ApiMessageStatus {
  record: ApiMessageRecord;
  /** mode agent: the recorded event's status (received, done, expired, ignored), or null before it is recorded. */
  inbound: { id: string; status: string; note: string | null } | null;
  deliveries: Array<Pick<DeliveryRecord, "id" | "status" | "platformMessageId" | "lastError" | "attempts" | "part"> & { sentAt: Date | null }>;
}

/**
 * The HTTP API's idempotency records. The unique key (caller, Idempotency-Key)
 * decides, in the database, which of any number of requests with one key
 * (retried, concurrent, on several processes) is the one: it writes the
 * record and, in the same transaction, its delivery; every other finds that
 * record. A crash can therefore never leave a delivery without its record or
 * a record of a send without its delivery.
 */
export class ApiMessageStore {
  constructor(readonly db: Database) {}

  async accept(m: NewApiMessage, parts: SendParts = {}): Promise<Accepted> {
    const id = randomUUID();
    const deliveryId = parts.delivery ? randomUUID() : null;
    const now = new Date();
    const record: ApiMessageRecord = { ...m, id, deliveryId, createdAt: now };
    const created = await this.db.sqlTransaction("api-message-accept", async (q) => {
      const n = await q.run(`INSERT INTO "ApiMessage" (${API_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT ("principal","idempotencyKey") DO NOTHING`, [
        id,
        m.principal,
        m.idempotencyKey,
        m.fingerprint,
        m.mode,
        m.platform,
        m.botId,
        deliveryId,
        m.eventId,
        m.envelope,
        now,
      ]);
      if (n === 0) return false;
      if (parts.delivery && deliveryId) {
        await q.run(
          `INSERT INTO "OutboundDelivery" ("id","inboundId","sessionId","platform","botId","address","part","text","status","attempts","createdAt","expiresAt") VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
          [
            deliveryId,
            null,
            parts.sessionId ?? "",
            m.platform,
            m.botId,
            parts.delivery.address,
            0,
            parts.delivery.text,
            "pending",
            0,
            now,
            parts.delivery.expiresAt,
          ],
        );
        if (parts.sessionId) await appendBotMessage(q, parts.sessionId, parts.delivery.text, now, id);
      }
      return true;
    });
    if (!created) {
      const existing = await this.byKey(m.principal, m.idempotencyKey);
      if (!existing) throw new Error("an API message's idempotency record vanished between its conflict and its read");
      return { created: false, record: existing };
    }
    if (!parts.delivery || !deliveryId) return { created: true, record };
    const delivery: DeliveryRecord = {
      id: deliveryId,
      inboundId: null,
      sessionId: parts.sessionId ?? "",
      platform: m.platform,
      botId: m.botId,
      address: parts.delivery.address,
      part: 0,
      text: parts.delivery.text,
      status: "pending",
      attempts: 0,
      platformMessageId: null,
      lastError: null,
      createdAt: now,
      expiresAt: parts.delivery.expiresAt,
      sentAt: null,
    };
    return { created: true, record, delivery };
  }

  async byKey(principal: string, key: string): Promise<ApiMessageRecord | undefined> {
    const [r] = await this.db.query<Record<string, unknown>>(
      "api-message-by-key",
      `SELECT ${API_COLUMNS} FROM "ApiMessage" WHERE "principal" = ? AND "idempotencyKey" = ?`,
      [principal, key],
    );
    return r ? apiOf(r) : undefined;
  }

  async find(id: string): Promise<ApiMessageRecord | undefined> {
    const [r] = await this.db.query<Record<string, unknown>>("api-message-find", `SELECT ${API_COLUMNS} FROM "ApiMessage" WHERE "id" = ?`, [id]);
    return r ? apiOf(r) : undefined;
  }

  /** The record with what became of it: its delivery (send), or its event and the replies its turn wrote (agent). */
  async status(id: string): Promise<ApiMessageStatus | undefined> {
    const record = await this.find(id);
    if (!record) return undefined;
    const cols = `"id","status","platformMessageId","lastError","attempts","part","sentAt"`;
    let inbound: ApiMessageStatus["inbound"] = null;
    let rows: Array<Record<string, unknown>> = [];
    if (record.deliveryId) rows = await this.db.query("api-message-delivery", `SELECT ${cols} FROM "OutboundDelivery" WHERE "id" = ?`, [record.deliveryId]);
    else if (record.eventId) {
      const [ev] = await this.db.query<{ id: string; status: string; note: string | null }>(
        "api-message-inbound",
        `SELECT "id","status","note" FROM "InboundEvent" WHERE "platform" = ? AND "botId" = ? AND "eventId" = ?`,
        [record.platform, record.botId, record.eventId],
      );
      if (ev) {
        inbound = ev;
        rows = await this.db.query("api-message-replies", `SELECT ${cols} FROM "OutboundDelivery" WHERE "inboundId" = ? ORDER BY "part" ASC`, [ev.id]);
      }
    }
    const deliveries = rows.map((r) => ({
      id: String(r.id),
      status: String(r.status),
      platformMessageId: (r.platformMessageId as string | null) ?? null,
      lastError: (r.lastError as string | null) ?? null,
      attempts: Number(r.attempts),
      part: Number(r.part),
      sentAt: r.sentAt == null ? null : toDate(r.sentAt),
    }));
    return { record, inbound, deliveries };
  }
}

/** The text, as the bot's message, at the end of the session's transcript (not for an archived session). */
async function appendBotMessage(q: Sql, sessionId: string, text: string, now: Date, apiMessageId: string): Promise<void> {
  const touched = await q.run(`UPDATE "Session" SET "lastActive" = ? WHERE "id" = ? AND "archived" = ?`, [now, sessionId, false]);
  if (touched !== 1) return;
  const [last] = await q.all<{ seq: number | null }>(`SELECT MAX("seq") AS "seq" FROM "Message" WHERE "sessionId" = ?`, [sessionId]);
  await q.run(`INSERT INTO "Message" ("sessionId","seq","role","content","meta","createdAt") VALUES (?,?,?,?,?,?)`, [
    sessionId,
    Number(last?.seq ?? 0) + 1,
    "assistant",
    text,
    JSON.stringify({ source: "api", apiMessageId }),
    now,
  ]);
}

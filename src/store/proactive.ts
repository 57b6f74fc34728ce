import { randomUUID } from "node:crypto";
import type { Selectable } from "kysely";
import type { Database } from "./db.js";
import { DeliveryStore, pendingDeliveries, type DeliveryRecord, type NewReply } from "./deliveries.js";
import { prepare, type Param } from "./prepared.js";
import type { DB, Sql } from "./sql.js";

/** Addresses being written, per database, by binding key (see ConversationAddressStore). */
const WRITING = new WeakMap<Database, Map<string, Promise<unknown>>>();

/** A conversation's durable address (the ConversationAddress table). */
export type ConversationAddressRecord = Selectable<DB["ConversationAddress"]>;

// On the path of a conversation's messages: compiled once (prepared.ts).
const UPSERT_ADDRESS = prepare((b, p: Param<ConversationAddressRecord>) =>
  b
    .insertInto("ConversationAddress")
    .values({
      key: p("key"),
      platform: p("platform"),
      botId: p("botId"),
      chatId: p("chatId"),
      replyChatId: p("replyChatId"),
      threadId: p("threadId"),
      bindingKey: p("bindingKey"),
      template: p("template"),
      updatedAt: p("updatedAt"),
    })
    .onConflict((oc) =>
      oc.column("key").doUpdateSet((eb) => ({
        bindingKey: eb.ref("excluded.bindingKey"),
        template: eb.ref("excluded.template"),
        replyChatId: eb.ref("excluded.replyChatId"),
        updatedAt: eb.ref("excluded.updatedAt"),
      })),
    ),
);

/**
 * Where each conversation can be reached. Written when the gateway first
 * handles a message of a conversation (and when its address changes), read
 * by the proactive paths: the HTTP API and hooks.
 */
export class ConversationAddressStore {
  constructor(readonly db: Database) {}

  /**
   * The gateway writes a conversation's address without waiting for it (it is
   * off the message's path), so a read by binding in the same conversation's
   * first turn (the agent's schedule_message) could overtake it on a
   * PostgreSQL pool. A read waits for the binding's write in flight, in any
   * store over this database (the directory and the jobs each have one).
   */
  get #writing(): Map<string, Promise<unknown>> {
    const known = WRITING.get(this.db);
    if (known) return known;
    const m = new Map<string, Promise<unknown>>();
    WRITING.set(this.db, m);
    return m;
  }

  async upsert(r: Omit<ConversationAddressRecord, "updatedAt" | "replyChatId"> & { replyChatId?: string | null }): Promise<void> {
    const write = this.db.exec(
      "conversation-address-upsert",
      UPSERT_ADDRESS.bind(this.db, { ...r, replyChatId: r.replyChatId ?? null, updatedAt: new Date() }),
    );
    const writing = this.#writing;
    writing.set(r.bindingKey, write);
    try {
      await write;
    } finally {
      if (writing.get(r.bindingKey) === write) writing.delete(r.bindingKey);
    }
  }

  /**
   * The conversations with this chat (and thread) id on a platform, most
   * recent first (several bots may share a chat). The id is the chat's
   * external id or the one the platform's API takes (its reply address's):
   * a Slack channel is "<team>/<channel>" to the gateway and "C…" to its
   * users, and both find it.
   */
  async byChat(platform: string, chatId: string, threadId: string, botId?: string): Promise<ConversationAddressRecord[]> {
    let q = this.db.q
      .selectFrom("ConversationAddress")
      .selectAll()
      .where("platform", "=", platform)
      .where((eb) => eb.or([eb("chatId", "=", chatId), eb("replyChatId", "=", chatId)]))
      .where("threadId", "=", threadId);
    if (botId !== undefined) q = q.where("botId", "=", botId);
    return this.db.query("conversation-address-by-chat", q.orderBy("updatedAt", "desc").limit(10));
  }

  /** The most recently used address of a binding (a thread sharing its channel's session has several). */
  async byBinding(bindingKey: string): Promise<ConversationAddressRecord | undefined> {
    // The write's failure is its writer's to report (and the next message writes again); the read goes on.
    await this.#writing.get(bindingKey)?.catch(() => undefined);
    const [r] = await this.db.query(
      "conversation-address-by-binding",
      this.db.q.selectFrom("ConversationAddress").selectAll().where("bindingKey", "=", bindingKey).orderBy("updatedAt", "desc").limit(1),
    );
    return r;
  }
}

/** One accepted POST /api/v1/messages (the ApiMessage table). */
export type ApiMessageRecord = Omit<Selectable<DB["ApiMessage"]>, "mode"> & { mode: "send" | "agent" };

const apiOf = (r: Selectable<DB["ApiMessage"]>): ApiMessageRecord => ({ ...r, mode: r.mode as ApiMessageRecord["mode"] });

export type NewApiMessage = Omit<ApiMessageRecord, "id" | "createdAt" | "deliveryId">;

export interface SendParts {
  /** The delivery to write with the record (mode send). */
  delivery?: NewReply & { expiresAt: Date };
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
  /** The delivery is written through `deliveries`, which hands it to the sender as written. */
  constructor(
    readonly db: Database,
    private readonly deliveries = new DeliveryStore(db),
  ) {}

  async accept(m: NewApiMessage, parts: SendParts = {}): Promise<Accepted> {
    const id = randomUUID();
    const now = new Date();
    // The reply this send makes: inserted in the transaction below, and returned as it was written.
    const delivery: DeliveryRecord | undefined = parts.delivery
      ? pendingDeliveries({ sessionId: parts.sessionId ?? "", inboundId: null, createdAt: now, expiresAt: parts.delivery.expiresAt }, [parts.delivery])[0]
      : undefined;
    const deliveryId = delivery?.id ?? null;
    const record: ApiMessageRecord = { ...m, id, deliveryId, createdAt: now };
    const b = this.db.q;
    const created = await this.deliveries.transaction("api-message-accept", async (q, write) => {
      const n = await q.run(
        b
          .insertInto("ApiMessage")
          .values({
            id,
            principal: m.principal,
            idempotencyKey: m.idempotencyKey,
            fingerprint: m.fingerprint,
            mode: m.mode,
            platform: m.platform,
            botId: m.botId,
            deliveryId,
            eventId: m.eventId,
            envelope: m.envelope,
            createdAt: now,
          })
          .onConflict((oc) => oc.columns(["principal", "idempotencyKey"]).doNothing()),
      );
      if (n === 0) return false;
      if (delivery) {
        await write([delivery]);
        if (parts.sessionId) await appendBotMessage(b, q, parts.sessionId, delivery.text, now, id);
      }
      return true;
    });
    if (!created) {
      const existing = await this.byKey(m.principal, m.idempotencyKey);
      if (!existing) throw new Error("an API message's idempotency record vanished between its conflict and its read");
      return { created: false, record: existing };
    }
    if (!delivery) return { created: true, record };
    return { created: true, record, delivery };
  }

  async byKey(principal: string, key: string): Promise<ApiMessageRecord | undefined> {
    const [r] = await this.db.query(
      "api-message-by-key",
      this.db.q.selectFrom("ApiMessage").selectAll().where("principal", "=", principal).where("idempotencyKey", "=", key),
    );
    return r ? apiOf(r) : undefined;
  }

  async find(id: string): Promise<ApiMessageRecord | undefined> {
    const [r] = await this.db.query("api-message-find", this.db.q.selectFrom("ApiMessage").selectAll().where("id", "=", id));
    return r ? apiOf(r) : undefined;
  }

  /** The record with what became of it: its delivery (send), or its event and the replies its turn wrote (agent). */
  async status(id: string): Promise<ApiMessageStatus | undefined> {
    const record = await this.find(id);
    if (!record) return undefined;
    const replies = this.db.q.selectFrom("OutboundDelivery").select(["id", "status", "platformMessageId", "lastError", "attempts", "part", "sentAt"]);
    let inbound: ApiMessageStatus["inbound"] = null;
    let deliveries: ApiMessageStatus["deliveries"] = [];
    if (record.deliveryId) deliveries = await this.db.query("api-message-delivery", replies.where("id", "=", record.deliveryId));
    else if (record.eventId) {
      const [ev] = await this.db.query(
        "api-message-inbound",
        this.db.q
          .selectFrom("InboundEvent")
          .select(["id", "status", "note"])
          .where("platform", "=", record.platform)
          .where("botId", "=", record.botId)
          .where("eventId", "=", record.eventId),
      );
      if (ev) {
        inbound = ev;
        deliveries = await this.db.query("api-message-replies", replies.where("inboundId", "=", ev.id).orderBy("part", "asc"));
      }
    }
    return { record, inbound, deliveries };
  }
}

/** The text, as the bot's message, at the end of the session's transcript (not for an archived session). */
async function appendBotMessage(b: Database["q"], q: Sql, sessionId: string, text: string, now: Date, apiMessageId: string): Promise<void> {
  const touched = await q.run(b.updateTable("Session").set({ lastActive: now }).where("id", "=", sessionId).where("archived", "=", false));
  if (touched !== 1) return;
  const [last] = await q.all(
    b
      .selectFrom("Message")
      .select((eb) => eb.fn.max("seq").as("seq"))
      .where("sessionId", "=", sessionId),
  );
  await q.run(
    b.insertInto("Message").values({
      sessionId,
      seq: Number(last?.seq ?? 0) + 1,
      role: "assistant",
      content: text,
      meta: JSON.stringify({ source: "api", apiMessageId }),
      createdAt: now,
    }),
  );
}

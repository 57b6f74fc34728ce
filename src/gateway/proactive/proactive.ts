import { createHash } from "node:crypto";
import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import { codecs } from "../../store/codecs.js";
import type { ApiMessageRecord, ApiMessageStatus, ApiMessageStore } from "../../store/proactive.js";
import type { DeliveryStore } from "../../store/deliveries.js";
import type { InboundResult } from "../adapter.js";
import type { InboundEnvelope } from "../contract.js";
import type { Outbound } from "../outbound/outbound.js";
import type { ConversationDirectory, ResolvedConversation } from "./directory.js";
import type { ConversationRef } from "../../config/conversation-ref.js";

export interface ProactiveDeps {
  directory: ConversationDirectory;
  messages: ApiMessageStore;
  deliveries: DeliveryStore;
  outbound: Outbound;
  /** The gateway's intake: records the event (deduplicated on platform + bot + event id) and queues its turn. */
  inbound: (env: InboundEnvelope) => Promise<InboundResult>;
  /** How long a proactive message may wait to be sent (INBOUND_TTL): never sent later. */
  ttlMs: number;
  log: Logger;
  onError: (where: string) => void;
}

export interface MessageRequest {
  principal: string;
  idempotencyKey: string;
  conversation: ConversationRef;
  text: string;
  mode: "send" | "agent";
}

export type MessageOutcome = { ok: true; replayed: boolean; status: DeliveryView } | { ok: false; status: 404 | 409 | 422; error: string };

/** A proactive message as the API shows it. */
export interface DeliveryView {
  id: string;
  mode: "send" | "agent";
  /**
   * queued: accepted, nothing handed to the platform yet (an agent turn still running);
   * sending: handed to the platform, its answer not recorded yet; delivered: the platform returned a
   * message id; failed / expired: never delivered (see error).
   */
  status: "queued" | "sending" | "delivered" | "failed" | "expired";
  platform: string;
  botId: string;
  createdAt: string;
  messages: Array<{ part: number; status: string; platformMessageId: string | null; sentAt: string | null; attempts: number; error: string | null }>;
  error: string | null;
}

/** A stable hash of the request as validated: two requests with one Idempotency-Key must be the same request. */
export function fingerprintOf(req: Pick<MessageRequest, "conversation" | "text" | "mode">): string {
  const canonical = (v: unknown): unknown =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
        )
      : v;
  return createHash("sha256")
    .update(JSON.stringify(canonical({ conversation: req.conversation, text: req.text, mode: req.mode })))
    .digest("hex");
}

/** Text handed to the agent from outside the chat: framed, so it is content to act on and never a chat command. */
export function framed(source: string, text: string): string {
  return `[${source}]\n${text}`;
}

/**
 * Proactive messages: the bot speaks first, into a conversation it knows.
 * `send` writes the text as a durable delivery (and into the conversation's
 * transcript as the bot's message) in the same transaction as the request's
 * idempotency record; `agent` records an inbound event for the conversation,
 * so the agent's turn and its answer take the same durable path as a chat
 * message (recorded before it is acknowledged, replayed after a crash,
 * committed once, its reply sent through the delivery ledger).
 */
export class Proactive {
  constructor(readonly deps: ProactiveDeps) {}

  async message(req: MessageRequest): Promise<MessageOutcome> {
    const fingerprint = fingerprintOf(req);
    // A retry finds its record before the conversation is resolved again (it may have moved since).
    const earlier = await this.deps.messages.byKey(req.principal, req.idempotencyKey);
    if (earlier) return this.#replay(earlier, fingerprint);
    const r = await this.deps.directory.resolve(req.conversation);
    if (!r.ok) return r;
    const c = r.conversation;
    if (req.mode === "send") {
      const sessionId = await this.deps.directory.currentSession(c);
      const accepted = await this.deps.messages.accept(
        {
          principal: req.principal,
          idempotencyKey: req.idempotencyKey,
          fingerprint,
          mode: "send",
          platform: c.platform,
          botId: c.botId,
          eventId: null,
          envelope: null,
        },
        {
          delivery: { address: c.template.replyTo, text: req.text, expiresAt: new Date(Date.now() + this.deps.ttlMs) },
          ...(sessionId && { sessionId }),
        },
      );
      if (!accepted.created) return this.#replay(accepted.record, fingerprint);
      if (accepted.delivery) this.#kick(accepted.delivery.id, c);
      return { ok: true, replayed: false, status: await this.view(accepted.record.id) };
    }
    const env = this.#envelope(c, {
      eventId: `api:${req.principal}:${createHash("sha256").update(req.idempotencyKey).digest("hex").slice(0, 40)}`,
      text: framed(`Message from the HTTP API, caller ${req.principal}`, req.text),
      sender: `api:${req.principal}`,
      senderName: `HTTP API (${req.principal})`,
    });
    const accepted = await this.deps.messages.accept({
      principal: req.principal,
      idempotencyKey: req.idempotencyKey,
      fingerprint,
      mode: "agent",
      platform: c.platform,
      botId: c.botId,
      eventId: env.eventId,
      envelope: codecs.apiMessageEnvelope.encode(env),
    });
    if (!accepted.created) return this.#replay(accepted.record, fingerprint);
    await this.#record(env);
    return { ok: true, replayed: false, status: await this.view(accepted.record.id) };
  }

  /** An inbound hook's delivery: one agent turn per delivery id, whatever number of times it is sent. */
  async hook(h: {
    name: string;
    delivery: string;
    conversation: ConversationRef;
    prompt: string;
  }): Promise<{ ok: true; result: InboundResult } | { ok: false; status: 404 | 409 | 422; error: string }> {
    const r = await this.deps.directory.resolve(h.conversation);
    if (!r.ok) return r;
    const env = this.#envelope(r.conversation, {
      eventId: `hook:${h.name}:${h.delivery}`,
      text: framed(`Webhook ${h.name}, delivery ${h.delivery}`, h.prompt),
      sender: `hook:${h.name}`,
      senderName: `hook ${h.name}`,
    });
    return { ok: true, result: await this.deps.inbound(env) };
  }

  async #replay(rec: ApiMessageRecord, fingerprint: string): Promise<MessageOutcome> {
    if (rec.fingerprint !== fingerprint)
      return { ok: false, status: 422, error: "this Idempotency-Key was already used with a different request: use a new key for a new message" };
    // An agent request whose event a crash kept from being recorded: recorded now (the event id makes it once).
    if (rec.mode === "agent" && rec.envelope) {
      const s = await this.deps.messages.status(rec.id);
      if (s && !s.inbound) await this.#record(codecs.apiMessageEnvelope.decode(rec.envelope, rec.id));
    }
    return { ok: true, replayed: true, status: await this.view(rec.id) };
  }

  async #record(env: InboundEnvelope): Promise<void> {
    const r = await this.deps.inbound(env);
    if (r.status === "ignored" || r.status === "expired")
      this.deps.log.warn({ platform: env.platform, eventId: env.eventId, status: r.status }, "a proactive agent request was not taken by the gateway");
  }

  #kick(deliveryId: string, c: ResolvedConversation): void {
    // In order behind the chat's earlier replies, held (claims renewed) while queued; marked info, as it always was.
    void this.deps.outbound.enqueue({ kind: "reply", deliveryId, to: c.template.replyTo, severity: "info" }).catch((err: unknown) => {
      this.deps.onError("api-send");
      this.deps.log.error({ deliveryId, err: errInfo(err) }, "an API message could not be handed to the sender; it stays pending and is retried");
    });
  }

  #envelope(c: ResolvedConversation, m: { eventId: string; text: string; sender: string; senderName: string }): InboundEnvelope {
    const t = c.template;
    const priv = t.chatKind === "private";
    return {
      platform: c.platform,
      botId: c.botId,
      chatKind: t.chatKind,
      chatId: c.chatId,
      ...(c.threadId && { threadId: c.threadId }),
      // A private chat's session is its person's: the event comes in their conversation. Elsewhere the caller is named.
      senderId: priv && t.senderId ? t.senderId : m.sender,
      senderName: priv && t.senderId ? (t.senderName ?? m.senderName) : m.senderName,
      text: m.text,
      mentioned: true,
      eventId: m.eventId,
      occurredAt: new Date(),
      replyTo: t.replyTo,
      channel: t.channel,
      ...(t.chatTitle !== undefined && { chatTitle: t.chatTitle }),
      // The place as the chat's own messages name it, so the routes give the turn the same agent (and binding).
      ...(t.workspace !== undefined && { workspace: t.workspace }),
    };
  }

  async view(id: string): Promise<DeliveryView> {
    const s = await this.deps.messages.status(id);
    if (!s) throw new Error(`API message ${id} vanished`);
    return viewOf(s);
  }
}

export function viewOf(s: ApiMessageStatus): DeliveryView {
  const { record: r, inbound, deliveries } = s;
  const messages = deliveries.map((d) => ({
    part: d.part,
    status: d.status,
    platformMessageId: d.platformMessageId,
    sentAt: d.sentAt?.toISOString() ?? null,
    attempts: d.attempts,
    error: d.lastError,
  }));
  let status: DeliveryView["status"] = "queued";
  let error: string | null = null;
  if (inbound && (inbound.status === "expired" || inbound.status === "ignored")) {
    status = inbound.status === "expired" ? "expired" : "failed";
    error = inbound.note ?? `the agent turn was not run (${inbound.status})`;
  } else if (inbound && inbound.status === "done" && deliveries.length === 0) {
    status = "failed";
    error = "the agent turn ended without an answer";
  } else if (deliveries.length) {
    const bad = deliveries.find((d) => d.status === "failed" || d.status === "expired");
    // Delivered only when the platform returned a message id for every message.
    if (bad) [status, error] = [bad.status as "failed" | "expired", bad.lastError];
    else if (deliveries.every((d) => d.status === "sent" && d.platformMessageId)) status = "delivered";
    else if (deliveries.some((d) => d.status === "sending" || d.status === "sent")) status = "sending";
  }
  return { id: r.id, mode: r.mode, status, platform: r.platform, botId: r.botId, createdAt: r.createdAt.toISOString(), messages, error };
}

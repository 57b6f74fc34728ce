import type { Config } from "../../config.js";
import { codecs } from "../../store/codecs.js";
import type { InboundStore } from "../../store/inbound.js";
import type { InboundResult } from "../adapter.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayMetrics } from "../metrics.js";
import { inSpan, traceCarrier, type TraceCarrier } from "../../telemetry/index.js";
import { conversationKey } from "./conversation.js";

/**
 * Records in flight per conversation: an event's handling waits for the
 * records that started before it, so events delivered at once (concurrent
 * webhooks) are all recorded before the first of them can rotate the
 * session (see the arrival stamps in RotateInput.stampInbound).
 */
export class RecordsInFlight {
  readonly #recording = new Map<string, Set<Promise<unknown>>>();

  /** Awaits `recording`, counted as in flight for `conversation` until it settles. */
  async track<T>(conversation: string, recording: Promise<T>): Promise<T> {
    const inFlight = this.#recording.get(conversation) ?? new Set<Promise<unknown>>();
    this.#recording.set(conversation, inFlight);
    inFlight.add(recording);
    try {
      return await recording;
    } finally {
      inFlight.delete(recording);
      if (inFlight.size === 0 && this.#recording.get(conversation) === inFlight) this.#recording.delete(conversation);
    }
  }

  /** The records of this conversation still in flight (a later event's handling waits for them). */
  earlier(conversation: string): Promise<unknown> | undefined {
    const inFlight = this.#recording.get(conversation);
    return inFlight?.size ? Promise.allSettled([...inFlight]) : undefined;
  }

  get size(): number {
    return this.#recording.size;
  }
}

/**
 * What is stored of an incoming event: NUL removed (PostgreSQL text cannot
 * hold it; no chat platform means one), and only `maxChars` of text, with the
 * original length kept for the "too long" reply.
 */
export function storable(incoming: InboundEnvelope, maxChars: number): InboundEnvelope {
  const clean = incoming.text.includes("\u0000") ? { ...incoming, text: incoming.text.replace(/\u0000/g, "") } : incoming;
  return clean.text.length > maxChars ? { ...clean, text: cutText(clean.text, maxChars), textLength: clean.text.length } : clean;
}

/** The first `max` UTF-16 units, never ending on half a surrogate pair. */
function cutText(text: string, max: number): string {
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** A recorded envelope read back through its column's codec, for replaying the event after a restart (throws StoreError Unreadable). */
export function revive(json: string, inboundId?: string): InboundEnvelope {
  return codecs.inboundEnvelope.decode(json, inboundId);
}

/** An arrival recorded for handling, or the answer for one that is not handled (and why, counted in the metrics). */
export type RecordedArrival = { env: InboundEnvelope; conversation: string; id: string; trace?: TraceCarrier } | { refused: InboundResult };

/**
 * Records an arriving event before anything else (the adapter may acknowledge
 * it once this resolves). A bot's own message is ignored; a redelivery is a
 * duplicate; one older than INBOUND_TTL is recorded as expired and never
 * answered.
 */
export async function recordArrival(
  deps: { inbound: InboundStore; metrics: GatewayMetrics; policy: Pick<Config, "MAX_INBOUND_CHARS" | "INBOUND_TTL" | "THREAD_SESSIONS"> },
  recording: RecordsInFlight,
  incoming: InboundEnvelope,
): Promise<RecordedArrival> {
  const { metrics, policy } = deps;
  const env = storable(incoming, policy.MAX_INBOUND_CHARS);
  if (env.senderIsBot) {
    metrics.inbound.inc({ platform: env.platform, outcome: "ignored" });
    return { refused: { status: "ignored", reason: "sent by a bot" } };
  }
  const age = Date.now() - env.occurredAt.getTime();
  const expired = age > policy.INBOUND_TTL;
  const conversation = conversationKey(env, policy.THREAD_SESSIONS);
  // The message's trace (the root span is active here), stored with it for the process that takes it in shared mode.
  const trace = traceCarrier();
  const rec = await recording.track(
    conversation,
    inSpan("record inbound", { attributes: { "db.operation.name": "record", "switchboard.expired": expired } }, () =>
      deps.inbound.record({
        conversation,
        platform: env.platform,
        botId: env.botId,
        eventId: env.eventId,
        envelope: codecs.inboundEnvelope.encode(env),
        occurredAt: env.occurredAt,
        ...(expired ? { status: "expired" as const, note: `arrived ${Math.round(age / 1000)} s late` } : {}),
        ...(trace && { traceparent: trace.traceparent }),
      }),
    ),
  );
  if (rec === "duplicate") {
    metrics.duplicates.inc({ platform: env.platform });
    metrics.inbound.inc({ platform: env.platform, outcome: "duplicate" });
    return { refused: { status: "duplicate" } };
  }
  if (expired) {
    metrics.expired.inc({ platform: env.platform, what: "inbound" });
    metrics.inbound.inc({ platform: env.platform, outcome: "expired" });
    return { refused: { status: "expired" } };
  }
  metrics.inbound.inc({ platform: env.platform, outcome: "accepted" });
  if (env.workspace !== undefined) metrics.workspaceMessages.inc({ platform: env.platform, workspace: metrics.workspaceLabel(env.platform, env.workspace) });
  return { env, conversation, id: rec.id, ...(trace && { trace }) };
}

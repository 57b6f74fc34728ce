import { type Attributes, type Span, SpanKind } from "@opentelemetry/api";
import type { InboundRecord } from "../../store/inbound.js";
import { hashId, inDelivery, inSpan, type TraceCarrier, tracing } from "../../telemetry/index.js";
import type { InboundResult } from "../adapter.js";
import type { InboundEnvelope } from "../contract.js";

/**
 * The root span of a message's trace: a new trace, whatever is active (an adapter's batch, another
 * message's), unless the message came in an HTTP request that has its span (a webhook, an API call:
 * the HTTP edge's delivery span, src/gateway/http/trace.ts), whose child it then is.
 */
export function inboundSpan<T>(env: InboundEnvelope, fn: (span: Span) => Promise<T>): Promise<T> {
  return inSpan(`inbound ${env.platform}`, { root: !inDelivery(), kind: SpanKind.CONSUMER, attributes: inboundAttributes(env) }, fn);
}

/** Says on the root span how the arrival ended, and returns it. */
export function settleInbound(span: Span, result: InboundResult): InboundResult {
  span.setAttribute("switchboard.inbound.outcome", result.status);
  if (result.status === "accepted" && result.inboundId) span.setAttribute("switchboard.inbound.id", result.inboundId);
  return result;
}

/**
 * What a message's root span says of it: where it came from, never what it
 * says; the chat and the sender hashed (src/telemetry hashId). Nothing is
 * computed while tracing is off.
 */
export function inboundAttributes(env: InboundEnvelope): Attributes {
  if (!tracing()) return {};
  return {
    "messaging.system": env.platform,
    "messaging.operation.type": "receive",
    "switchboard.platform": env.platform,
    "switchboard.bot.id": env.botId,
    "switchboard.chat.kind": env.chatKind,
    "switchboard.chat.id_hash": hashId(env.chatId)!,
    "switchboard.user.id_hash": hashId(env.senderId)!,
    "switchboard.message.chars": env.text.length,
    "switchboard.message.attachments": env.attachments?.length ?? 0,
    ...(env.change && { "switchboard.message.change": env.change.kind }),
  };
}

/** The trace a recorded event was stored with (shared mode, a replay after a restart): its handling continues it. */
export function storedTrace(rec: Pick<InboundRecord, "traceparent" | "receivedAt">): TraceCarrier | undefined {
  return rec.traceparent ? { traceparent: rec.traceparent, queuedAt: rec.receivedAt.getTime() } : undefined;
}

import type { Attributes } from "@opentelemetry/api";
import { hashId, tracing } from "../../telemetry/index.js";
import type { InboundEnvelope } from "../contract.js";

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

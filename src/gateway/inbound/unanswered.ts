import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { InboundStore } from "../../store/inbound.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayLedger } from "../ledger.js";
import type { GatewayMetrics } from "../metrics.js";
import type { Outbound } from "../outbound/outbound.js";
import { messages } from "./messages.js";

export interface UnansweredDeps {
  inbound: InboundStore;
  ledger: GatewayLedger;
  outbound: Outbound;
  metrics: GatewayMetrics;
  log: Logger;
}

/**
 * An accepted event that reached INBOUND_TTL without an answer: marked
 * expired (never answered late), counted, logged, and its chat gets a
 * short notice to send it again. The notice goes through a delivery record
 * when the store takes it, else out of the door as a line (best effort).
 */
export async function noticeUnanswered(deps: UnansweredDeps, env: InboundEnvelope, inboundId: string, why: string): Promise<void> {
  const { metrics, log } = deps;
  const text = messages.unanswered(env.occurredAt);
  let counted = false;
  const told = () => {
    counted = true;
    metrics.expired.inc({ platform: env.platform, what: "inbound" });
    metrics.unanswered.inc({ platform: env.platform });
    log.error(
      { platform: env.platform, inboundId, chatId: env.chatId, occurredAt: env.occurredAt.toISOString(), why },
      "an accepted event reached INBOUND_TTL unanswered; its chat is asked to send it again",
    );
  };
  try {
    // Only the one that moves the event from received to expired tells the chat: with several processes (or a
    // failing turn and a replay racing), two may find it unanswered at once, and the chat must hear it once.
    if (!(await deps.inbound.mark(inboundId, "expired", why))) return;
    told();
    // Not keyed to the inbound's TTL (that has passed): the notice gets a TTL of its own.
    const r = await deps.ledger.commit({
      sessionId: "",
      inboundIds: [],
      messages: [],
      turnIncrement: 0,
      replies: [{ replyTo: env.replyTo, text, kind: "notice", severity: "warn" }],
    });
    for (const { id } of r.deliveries) await deps.outbound.enqueue({ kind: "reply", deliveryId: id, to: env.replyTo });
  } catch (err) {
    if (!counted) told();
    metrics.internalErrors.inc({ where: "unanswered-notice" });
    log.error({ inboundId, err: errInfo(err) }, "the store could not record the unanswered notice; sending it without a delivery record");
    await deps.outbound.enqueue({ kind: "line", to: env.replyTo, text, severity: "warn" }).catch((e: unknown) => {
      metrics.internalErrors.inc({ where: "unanswered-notice-send" });
      log.error({ inboundId, err: errInfo(e) }, "the unanswered notice could not be sent either");
    });
  }
}

import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { InboundRecord, InboundStore } from "../../store/inbound.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayMetrics } from "../metrics.js";
import { revive } from "./recording.js";

/** Unhandled events read per page when replaying at start. */
const REPLAY_PAGE = 1000;

export interface RecordedDeps {
  inbound: InboundStore;
  metrics: GatewayMetrics;
  log: Logger;
  inboundTtlMs: number;
  /** Tells the chat of an accepted event that can no longer be answered. */
  unanswered(env: InboundEnvelope, inboundId: string, why: string): Promise<void>;
}

/**
 * A recorded, still unhandled event ready to handle again, or why not:
 * expired events are marked (never answered late), unreadable ones ignored.
 */
export async function readRecorded(deps: RecordedDeps, rec: InboundRecord): Promise<InboundEnvelope | "expired" | "unreadable"> {
  let env: InboundEnvelope;
  try {
    env = revive(rec.envelope);
  } catch (err) {
    deps.metrics.internalErrors.inc({ where: "inbound-envelope" });
    deps.log.error({ inboundId: rec.id, platform: rec.platform, err: errInfo(err) }, "a recorded event could not be read back; it is not answered");
    await deps.inbound.mark(rec.id, "ignored", "unreadable envelope");
    return "unreadable";
  }
  if (Date.now() - rec.occurredAt.getTime() > deps.inboundTtlMs) {
    // Accepted (acknowledged to the platform) and never answered: say so in its chat, never silence.
    await deps.unanswered(env, rec.id, "expired before it was handled");
    return "expired";
  }
  return env;
}

/**
 * Accepted events that were never handled are handled now (`enqueue`), or
 * expired if they are older than INBOUND_TTL (never answered late).
 */
export async function replayUnhandled(
  deps: RecordedDeps,
  enqueue: (env: InboundEnvelope, rec: InboundRecord) => void,
): Promise<{ replayed: number; expired: number }> {
  let replayed = 0;
  let expired = 0;
  // Every page, in recorded order: each chat's chain gets its events in the order they were recorded.
  for (let after = 0; ; ) {
    const page = await deps.inbound.unhandled(REPLAY_PAGE, after);
    for (const rec of page) {
      const env = await readRecorded(deps, rec);
      if (env === "expired") expired++;
      if (typeof env === "string") continue;
      enqueue(env, rec);
      replayed++;
    }
    if (page.length < REPLAY_PAGE) break;
    after = page[page.length - 1]!.seq;
  }
  if (replayed || expired) deps.log.info({ replayed, expired }, "recovered events from before the restart");
  return { replayed, expired };
}

import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { ReplyAddress } from "../../runtime/events.js";
import type { DeliveryRecord } from "../../store/deliveries.js";
import type { Adapter } from "../adapter.js";
import type { SentMessage } from "../contract.js";
import { isAdapterError } from "../contract.js";
import type { GatewayMetrics } from "../metrics.js";
import type { Draft } from "./drafts.js";
import type { ChatLane } from "./scheduler.js";
import type { SentLog } from "./sent-log.js";
import { canReadBack, findSent } from "./sink-calls.js";

export interface ReadBackContext {
  metrics: GatewayMetrics;
  log: Logger;
  sentLog?: SentLog;
}

/**
 * Before resending a reply left `sending`, asks the platform which of its
 * chunks it already shows (Slack: by the delivery key carried in each
 * message's metadata). Chunks the local sent log knows are not asked about.
 * A platform that cannot tell (no read-back, or it refused the read) gets
 * the chunk again: that is the documented in-flight window.
 */
export async function readBack(
  ctx: ReadBackContext,
  a: { adapter: Adapter; lane: ChatLane },
  rec: DeliveryRecord,
  to: ReplyAddress,
  chunks: number,
  draft?: Draft,
): Promise<Map<string, SentMessage> | undefined> {
  if (!canReadBack(a.adapter)) return undefined;
  const keys: string[] = [];
  for (let i = 0; i < chunks; i++) if (!(i === 0 && draft?.messageId) && ctx.sentLog?.sent(rec.id, i) === undefined) keys.push(`${rec.id}:${i}`);
  if (!keys.length) return undefined;
  try {
    const found = await a.lane.call(() => findSent(a.adapter, to, keys, rec.createdAt), { label: "read-back" });
    ctx.metrics.outbound.inc({ platform: rec.platform, call: "read-back", outcome: found?.size ? "found" : "absent" });
    return found;
  } catch (err) {
    ctx.metrics.outbound.inc({ platform: rec.platform, call: "read-back", outcome: "error" });
    if (!isAdapterError(err, "Rejected")) throw err; // the reply stays queued; the read is tried again
    ctx.log.error(
      { deliveryId: rec.id, platform: rec.platform, err: errInfo(err) },
      "could not check whether a reply left sending by a crash was already posted; sending it again, so it may show twice",
    );
    return undefined;
  }
}

/** One chunk's read-back before a retried send (no rate-limit slot of its own: it runs inside the send's). */
export async function findOne(
  ctx: ReadBackContext,
  a: { adapter: Adapter },
  rec: DeliveryRecord,
  to: ReplyAddress,
  key: string,
): Promise<SentMessage | undefined> {
  if (!canReadBack(a.adapter)) return undefined;
  try {
    return (await findSent(a.adapter, to, [key], rec.createdAt)).get(key);
  } catch (err) {
    if (!isAdapterError(err, "Rejected")) throw err;
    ctx.metrics.outbound.inc({ platform: rec.platform, call: "read-back", outcome: "error" });
    ctx.log.error(
      { deliveryId: rec.id, platform: rec.platform, err: errInfo(err) },
      "could not check whether a failed send was posted after all; sending it again, so it may show twice",
    );
    return undefined;
  }
}

import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { ReplyAddress } from "../../runtime/events.js";
import type { DeliveryRecord, DeliveryStore } from "../../store/deliveries.js";
import type { Adapter } from "../adapter.js";
import type { GatewayMetrics } from "../metrics.js";
import type { ChatLane } from "./scheduler.js";
import type { RenderFailed } from "./send-chunk.js";
import { sendLine } from "./sink-calls.js";

/** What a render failure is reported with. */
export interface RenderFailureDeps {
  metrics: GatewayMetrics;
  log: Logger;
}

/** A render threw and the text is sent as written instead (chunksOf's fallback): logged and counted. */
export function renderFellBack(deps: RenderFailureDeps, where: { platform: string; deliveryId?: string; chars: number }, err: unknown): void {
  deps.metrics.outbound.inc({ platform: where.platform, call: "render", outcome: "literal" });
  deps.log.warn({ ...where, err: errInfo(err) }, "a reply could not be rendered for the platform; it is sent as written (plain text) instead");
}

/**
 * Neither the render nor the text as written could be made (RenderFailed). That depends on the
 * text alone, so it would fail the same on every attempt: the reply is failed at once, never
 * retried until it expires, and the chat is told in a fixed text that needs no rendering.
 */
export async function failUnrenderable(
  deps: RenderFailureDeps & { deliveries: DeliveryStore },
  rec: DeliveryRecord,
  to: ReplyAddress,
  a: { adapter: Adapter; lane: ChatLane },
  err: RenderFailed,
): Promise<void> {
  deps.metrics.outbound.inc({ platform: rec.platform, call: "render", outcome: "failed" });
  deps.log.error(
    { deliveryId: rec.id, platform: rec.platform, chars: rec.text.length, err: errInfo(err) },
    "a reply could not be formatted at all; it is failed, not retried",
  );
  await deps.deliveries.markFailed(rec.id, "failed", err.message);
  const text = `A reply could not be shown here: it could not be formatted for this chat (ref ${rec.id}). The gateway's log has the details.`;
  try {
    await a.lane.call(() => sendLine(a.adapter, to, text, { idempotencyKey: `${rec.id}:unrenderable`, severity: "error" }), { label: "send" });
  } catch (e) {
    deps.metrics.outbound.inc({ platform: rec.platform, call: "send", outcome: "error" });
    deps.log.error({ deliveryId: rec.id, platform: rec.platform, err: errInfo(e) }, "the notice about a reply that could not be formatted could not be sent");
  }
}

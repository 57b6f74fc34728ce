import type { Logger } from "../../src/log.js";
import type { AdapterContext, InboundEnvelope } from "../types.js";
import type { DiscordAdapterOptions } from "./options.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

/**
 * Hands one envelope to the gateway, retrying while the store is briefly unavailable. Discord does
 * not redeliver, so the event is dropped only past the attempt limit or the give-up age, or once
 * the adapter has stopped.
 */
export async function recordInbound(
  ctx: AdapterContext,
  env: InboundEnvelope,
  opts: Pick<DiscordAdapterOptions, "inboundAttempts" | "inboundGiveUpMs" | "inboundBackoffMs">,
  stopped: () => boolean,
  log: Logger | undefined,
): Promise<void> {
  const attempts = opts.inboundAttempts ?? Infinity;
  const giveUpAt = env.occurredAt.getTime() + (opts.inboundGiveUpMs ?? 10 * 60_000);
  const base = opts.inboundBackoffMs ?? 200;
  for (let attempt = 1; ; attempt++) {
    try {
      const r = await ctx.inbound(env);
      log?.debug({ eventId: env.eventId, status: r.status }, "discord inbound");
      return;
    } catch (err) {
      const error = err instanceof Error ? err.name : typeof err;
      ctx.reportError?.("discord-record", err);
      if (attempt >= attempts || stopped() || Date.now() >= giveUpAt) {
        ctx.reportError?.("discord-record-dropped", err);
        log?.error({ eventId: env.eventId, attempt, error }, "discord: inbound event could not be recorded; dropped (Discord does not redeliver)");
        return;
      }
      log?.[attempt >= 5 ? "error" : "warn"](
        { eventId: env.eventId, attempt, error },
        "discord: recording an inbound event failed; retrying (later events of its channel wait)",
      );
      await sleep(Math.min(base * 2 ** (attempt - 1), 5000));
    }
  }
}

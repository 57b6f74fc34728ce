import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { Adapter, AdapterContext } from "../adapter.js";
import type { AdapterRegistry } from "../adapters.js";
import type { GatewayMetrics } from "../metrics.js";
import type { Outbound } from "../outbound/outbound.js";

/** What starting the adapters reads of the gateway. */
export interface AdapterStartDeps {
  adapters: AdapterRegistry;
  outbound: Outbound;
  metrics: GatewayMetrics;
  log: Logger;
}

/**
 * Starts every adapter at once. An adapter that fails to start is logged and
 * reported down; the rest carry on.
 */
export async function startAdapters(deps: AdapterStartDeps, context: (adapter: Adapter) => AdapterContext): Promise<void> {
  await Promise.all(
    deps.adapters.list().map(async (a) => {
      try {
        await a.start(context(a));
        deps.adapters.rekey(a);
        deps.outbound.rekey(a);
      } catch (err) {
        deps.metrics.internalErrors.inc({ where: `${a.platform}:adapter-start` });
        deps.log.error(
          { platform: a.platform, err: errInfo(err) },
          "adapter failed to start; the gateway runs without it (/healthz?ready=1 answers 503 naming it)",
        );
      }
    }),
  );
}

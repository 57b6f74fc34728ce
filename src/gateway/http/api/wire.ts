import type { Config } from "../../../config.js";
import type { Logger } from "../../../log.js";
import { registerSecret } from "../../../log.js";
import type { Registry } from "../../../session/registry.js";
import type { Database } from "../../../store/db.js";
import type { DeliveryStore } from "../../../store/deliveries.js";
import { ApiMessageStore, ConversationAddressStore } from "../../../store/proactive.js";
import type { HttpHandler, HttpResponse } from "../../adapter.js";
import type { Gateway } from "../../inbound/gateway.js";
import type { HttpServer } from "../server.js";
import { parseHooksConfig } from "../../../config/hooks.js";
import { mountHooks } from "./hooks.js";
import { mountMessages, MAX_API_TEXT } from "./messages.js";
import { ApiServer } from "./server.js";
import { parseApiTokens } from "../../../config/api-tokens.js";
import { ApiTokens } from "./tokens.js";
import type { GatewayMetrics } from "../../metrics.js";
import type { Outbound } from "../../outbound/outbound.js";
import { ConversationDirectory } from "../../proactive/directory.js";
import { Proactive } from "../../proactive/proactive.js";

export interface ProactiveParts {
  directory: ConversationDirectory;
  /** Mounts the HTTP API v1 and the hooks on the edge; `gate` answers 503 for new work once a stop begins. */
  mount(http: HttpServer, gateway: Gateway, gate: (h: HttpHandler) => HttpHandler): ApiServer;
}

/** The proactive-messages feature, composed (app.ts calls this twice: the directory before the Gateway, the routes after). */
export function proactiveParts(o: {
  config: Config;
  db: Database;
  registry: Registry;
  deliveries: DeliveryStore;
  outbound: Outbound;
  log: Logger;
  metrics: GatewayMetrics;
}): ProactiveParts {
  const { config, db, log, metrics } = o;
  const onError = (where: string) => metrics.internalErrors.inc({ where });
  const directory = new ConversationDirectory(new ConversationAddressStore(db), o.registry, log, onError);
  return {
    directory,
    mount(http, gateway, gate) {
      const tokens = parseApiTokens(config.API_TOKENS);
      const hooks = parseHooksConfig(config.HOOKS_CONFIG);
      for (const t of tokens) registerSecret(t.token);
      for (const h of hooks) registerSecret(h.secret);
      const proactive = new Proactive({
        directory,
        messages: new ApiMessageStore(db),
        deliveries: o.deliveries,
        outbound: o.outbound,
        inbound: (env) => gateway.inbound(env),
        ttlMs: config.INBOUND_TTL,
        log,
        onError,
      });
      const api = new ApiServer({
        tokens: new ApiTokens(tokens, config.OPERATOR_TOKEN),
        log,
        refused: (reason) => metrics.httpRefused.inc({ reason: `api-${reason}` }),
        onError: () => metrics.httpErrors.inc(),
      });
      mountMessages(api.app, proactive);
      api.attach((m, p, h, opts) => http.mount(m, p, gate(h), "login", opts), MAX_API_TEXT * 4 + 16 * 1024);
      mountHooks((m, p, h, opts) => http.route(m, p, gate(h), opts), hooks, {
        proactive,
        log,
        refused: (reason) => metrics.httpRefused.inc({ reason }),
        counted: (outcome) => metrics.inbound.inc({ platform: "hook", outcome }),
      });
      return api;
    },
  };
}

export type { HttpResponse };

import type { HttpBindings } from "@hono/node-server";
import type { RequestIdVariables } from "hono/request-id";
import type { Logger } from "../../log.js";
import type { HttpHandler, RouteOptions } from "../adapter.js";
import type { GatewayMetrics } from "../metrics.js";
import type { BodyBudget } from "./body.js";
import type { HttpLimits } from "./limits.js";
import type { OperatorAuth } from "./operator-auth.js";
import type { RefusalLog } from "./refusals.js";

/** Which routes a listener serves: "all" (the one port), or split between a public and an operator port. */
export type ListenerRole = "all" | "public" | "operator";
/** Who may reach a route: anyone, whoever passes the operator check, or whoever passes its Host check (/login, the API v1). */
export type Access = "public" | "operator" | "login";
/** Methods a route may be mounted for (the HTTP API uses more than webhooks do). */
export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface Route {
  method: HttpMethod;
  path: string;
  handler: HttpHandler;
  access: Access;
  opts: RouteOptions;
}

/** What the edge's parts share: the server's settings, its operator check and refusal log, and whether it is starting. */
export interface Edge {
  readonly log: Logger;
  readonly metrics: GatewayMetrics | undefined;
  readonly auth: OperatorAuth;
  readonly refusals: RefusalLog;
  readonly limits: HttpLimits;
  readonly budget: BodyBudget;
  readonly starting: boolean;
}

export type Env = { Bindings: HttpBindings; Variables: RequestIdVariables };

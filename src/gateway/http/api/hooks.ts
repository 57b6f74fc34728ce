import type { Logger } from "../../../log.js";
import type { HttpHandler, HttpRequest, HttpResponse, RouteOptions } from "../../adapter.js";
import type { Proactive } from "../../proactive/proactive.js";
import type { HookSpec } from "../../../config/hooks.js";
import { renderPrompt } from "./hook-prompt.js";
import { DELIVERY_HEADER, parseSignature, SIGNATURE_HEADER, verify } from "./signature.js";

const JSON_TYPE = "application/json; charset=utf-8";
const answer = (status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers: { "content-type": JSON_TYPE, ...headers },
  body: JSON.stringify(body),
});
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);

export interface HookDeps {
  proactive: Proactive;
  log: Logger;
  /** Counts a refused delivery (switchboard_http_refused_total{reason}). */
  refused: (reason: string) => void;
  /** Counts accepted and duplicate deliveries (switchboard_inbound_total, platform "hook"). */
  counted: (outcome: string) => void;
}

/**
 * POST /hooks/<name>: each configured hook is a public route of its own,
 * with its own body limit. The signature headers are checked before the
 * body is read, the HMAC over the bytes as received once it is; a request
 * that fails either gets 401 and leaves no record. A valid delivery becomes
 * an inbound event of the hook's conversation, keyed on the delivery id, so
 * a repeated delivery is dropped (durably) and each runs one agent turn.
 */
export function mountHooks(route: (method: "POST", path: string, handler: HttpHandler, opts: RouteOptions) => void, hooks: HookSpec[], deps: HookDeps): void {
  for (const hook of hooks) {
    const precheck = (req: Omit<HttpRequest, "rawBody">): HttpResponse | undefined => {
      const p = parseSignature(one(req.headers[SIGNATURE_HEADER]), one(req.headers[DELIVERY_HEADER]));
      if (p.ok) return undefined;
      deps.refused("hook-signature");
      return answer(401, { error: p.error });
    };
    route(
      "POST",
      `/hooks/${hook.name}`,
      async (req) => {
        const p = parseSignature(one(req.headers[SIGNATURE_HEADER]), one(req.headers[DELIVERY_HEADER]));
        if (!p.ok || !verify(hook.secret, p.parts, req.rawBody)) {
          deps.refused("hook-signature");
          return answer(401, { error: "the signature does not match: HMAC-SHA256 with the hook's secret over <t>.<delivery id>.<raw body>, hex, as v1=" });
        }
        const body = req.rawBody.toString("utf8");
        const prompt = renderPrompt(hook.prompt, { body, hook: hook.name, delivery: p.parts.delivery });
        const r = await deps.proactive.hook({ name: hook.name, delivery: p.parts.delivery, conversation: hook.conversation, prompt });
        if (!r.ok) {
          deps.log.error(
            { hook: hook.name, status: r.status, error: r.error },
            "a signed hook delivery has no conversation to go to: check its conversation in HOOKS_CONFIG",
          );
          return answer(r.status === 404 ? 503 : r.status, { error: r.error }, r.status === 404 ? { "retry-after": "60" } : {});
        }
        deps.counted(r.result.status);
        if (r.result.status === "duplicate") return answer(200, { status: "duplicate", delivery: p.parts.delivery });
        if (r.result.status !== "accepted") return answer(422, { status: r.result.status, error: r.result.status === "expired" ? "expired" : r.result.reason });
        return answer(202, { status: "accepted", delivery: p.parts.delivery });
      },
      { public: true, maxBodyBytes: hook.maxBodyBytes, precheck },
    );
  }
}

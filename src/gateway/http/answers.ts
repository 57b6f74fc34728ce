import type { HttpResponse } from "../adapter.js";

/** Answers the edge gives itself, the same from every route. */

export const JSON_TYPE = "application/json; charset=utf-8";

export const json = (status: number, body: unknown): HttpResponse => ({ status, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(body) });

/** The answer of a route that cannot serve right now (the gateway starting or stopping): 503, and when to send it again. */
export function unavailable(error: string, retryAfterS = 5): HttpResponse {
  const r = json(503, { error });
  return { ...r, headers: { ...r.headers, "cache-control": "no-store", "retry-after": String(retryAfterS) } };
}

export const starting = () => unavailable("switchboard is starting; send this again in a few seconds", 2);

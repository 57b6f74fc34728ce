import { z } from "zod";
import type { HttpRequest, HttpResponse } from "../types.js";
import * as ids from "./ids.js";

/** What the page may send: a message (POST /api/console/messages) and an address query (GET /api/console/address). */
const consoleId = z.string().regex(ids.ID_PATTERN, `must be ${ids.ID_RULE}`);

export const MessageBody = z.object({
  chat: z.discriminatedUnion("type", [
    z.object({ type: z.literal("private"), id: consoleId.optional(), title: z.string().max(200).optional() }),
    z.object({ type: z.literal("group"), id: consoleId, title: z.string().max(200).optional(), threadId: consoleId.optional() }),
  ]),
  sender: z.object({ id: consoleId, name: z.string().trim().min(1, "must not be empty").max(100) }),
  text: z.string().refine((t) => t.trim().length > 0, "must not be empty"),
  mention: z.boolean().optional(),
  clientId: z.string().regex(ids.EVENT_ID_PATTERN, "must be 1-128 characters of A-Z, a-z, 0-9, '_', '.', ':' and '-' (a UUID fits)").optional(),
});
export type ConsoleMessage = z.infer<typeof MessageBody>;

export const AddressQuery = z.discriminatedUnion("type", [
  z.object({ type: z.literal("private"), id: consoleId }),
  z.object({ type: z.literal("group"), id: consoleId, threadId: consoleId.optional() }),
]);

export const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  body: JSON.stringify(body),
});

export const explain = (e: z.ZodError): string => e.issues.map((i) => `${i.path.length ? i.path.join(".") : "body"}: ${i.message}`).join("; ");

/**
 * The console acts as a trusted operator, so another site open in the same
 * browser must not be able to post to it. Requiring a JSON content type makes
 * a cross-site request need a CORS preflight, which this server never grants;
 * a browser's Origin header, when sent, must also match the Host.
 */
export function refuseCrossSite(req: HttpRequest): HttpResponse | undefined {
  const type = String(req.headers["content-type"] ?? "");
  if (!/^application\/json\b/i.test(type)) return json(415, { error: "send the message as JSON, with the header content-type: application/json" });
  const origin = req.headers.origin;
  const host = req.headers.host;
  if (typeof origin === "string" && origin !== "null" && typeof host === "string") {
    let originHost: string | undefined;
    try {
      originHost = new URL(origin).host;
    } catch {
      originHost = undefined;
    }
    if (originHost !== host)
      return json(403, { error: "cross-origin requests to the console are refused: open the console page from this gateway's own address" });
  }
  if (origin === "null") return json(403, { error: "requests from an opaque origin are refused: open the console page from this gateway's own address" });
  return undefined;
}

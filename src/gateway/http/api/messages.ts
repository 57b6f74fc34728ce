import { createRoute, z } from "@hono/zod-openapi";
import type { Proactive } from "../../proactive/proactive.js";
import { chatRefSchema, sessionRefSchema } from "../../../config/conversation-ref.js";
import { ErrorBody } from "./openapi.js";
import { API_BASE, requireScope, type ApiApp } from "./server.js";

/** Longest text one API message may carry (long texts are split for the platform like any reply). */
export const MAX_API_TEXT = 40_000;

const Conversation = z
  .union([z.strictObject(chatRefSchema.shape).openapi("ChatConversation"), z.strictObject(sessionRefSchema.shape).openapi("SessionConversation")])
  .openapi("Conversation", {
    description: "A chat by its platform id (and thread), or a session id standing for its conversation (which may have moved on with /new).",
  });

const MessageBody = z
  .strictObject({
    conversation: Conversation,
    text: z
      .string()
      .min(1)
      .max(MAX_API_TEXT)
      .refine((t) => t.trim().length > 0, "must not be blank"),
    mode: z.enum(["send", "agent"]).default("send").openapi({ description: "send: the text as it is; agent: an agent turn on the text, whose answer is sent" }),
  })
  .openapi("MessageRequest");

const Delivery = z
  .object({
    id: z.string(),
    mode: z.enum(["send", "agent"]),
    status: z
      .enum(["queued", "sending", "delivered", "failed", "expired"])
      .openapi({ description: "delivered only once the platform returned a message id for every message" }),
    platform: z.string(),
    botId: z.string(),
    createdAt: z.string(),
    messages: z.array(
      z.object({
        part: z.number(),
        status: z.string(),
        platformMessageId: z.string().nullable(),
        sentAt: z.string().nullable(),
        attempts: z.number(),
        error: z.string().nullable(),
      }),
    ),
    error: z.string().nullable(),
  })
  .openapi("Delivery");

const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });

/** An Idempotency-Key (draft-ietf-httpapi-idempotency-key-header): a structured-field string, quotes optional. */
const KEY = /^"?([\x21\x23-\x7e]{1,255})"?$/;

const IdempotencyHeaders = z.object({
  "idempotency-key": z.string().openapi({
    description:
      "Required. The same key makes one delivery, however often (and however concurrently) it is sent; with a different body it is refused with 422.",
    example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
  }),
});

const postMessage = createRoute({
  method: "post",
  path: `${API_BASE}/messages`,
  summary: "Send a message into a conversation the bot knows",
  middleware: [requireScope("send")] as const,
  security: [{ bearer: [] }],
  request: { headers: IdempotencyHeaders, body: { content: { "application/json": { schema: MessageBody } }, required: true } },
  responses: {
    202: {
      ...json(Delivery, "Accepted (or, with Idempotent-Replayed: true, accepted earlier under this key)"),
      headers: { Location: { schema: { type: "string" } } },
    },
    400: json(ErrorBody, "Invalid body or a missing Idempotency-Key"),
    401: json(ErrorBody, "No valid token"),
    403: json(ErrorBody, "The token lacks the send scope"),
    404: json(ErrorBody, "No such conversation is known"),
    409: json(ErrorBody, "Several bots are in that chat: name one"),
    422: json(ErrorBody, "The Idempotency-Key was used with another request, or the conversation's recorded address is unreadable"),
  },
});

const getDelivery = createRoute({
  method: "get",
  path: `${API_BASE}/deliveries/{id}`,
  summary: "Follow a message sent through the API",
  middleware: [requireScope("read")] as const,
  security: [{ bearer: [] }],
  request: {
    params: z.object({
      id: z
        .string()
        .uuid()
        .openapi({ param: { name: "id", in: "path" } }),
    }),
  },
  responses: {
    200: json(Delivery, "The message and each part's platform status"),
    400: json(ErrorBody, "The id is not a UUID"),
    404: json(ErrorBody, "Unknown (or another caller's, without the admin scope)"),
  },
});

/** POST /api/v1/messages and GET /api/v1/deliveries/{id}. */
export function mountMessages(app: ApiApp, proactive: Proactive): void {
  app.openapi(postMessage, async (c) => {
    const m = KEY.exec(c.req.valid("header")["idempotency-key"].trim());
    if (!m) return c.json({ error: "Idempotency-Key must be 1-255 visible characters (a UUID is a good key)" }, 400);
    const body = c.req.valid("json");
    const principal = c.get("principal").name;
    const r = await proactive.message({ principal, idempotencyKey: m[1]!, conversation: body.conversation, text: body.text, mode: body.mode });
    if (!r.ok) return c.json({ error: r.error }, r.status);
    return c.json(r.status, 202, { location: `${API_BASE}/deliveries/${r.status.id}`, ...(r.replayed && { "idempotent-replayed": "true" }) });
  });
  app.openapi(getDelivery, async (c) => {
    const { id } = c.req.valid("param");
    const caller = c.get("principal");
    const rec = await proactive.deps.messages.find(id);
    // Another caller's message is as unknown as a missing one: no existence oracle across tokens (the admin scope sees all).
    if (!rec || (rec.principal !== caller.name && !caller.scopes.has("admin"))) return c.json({ error: `no delivery ${id} for this token` }, 404);
    return c.json(await proactive.view(id), 200);
  });
}

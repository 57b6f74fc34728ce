import { z } from "@hono/zod-openapi";

/**
 * The parts of the OpenAPI document no single route declares: the refusals
 * every route can answer because of where it sits (the HTTP edge's limits,
 * the API's authentication and content-type check, the stop's 503). They are
 * added to every operation when the document is served, so a route a module
 * mounts later lists them too; a status a route declares itself keeps its
 * own schema, and a shared refusal with another body joins it as `anyOf`.
 */

/** The error body of the API's own refusals and of the HTTP edge's (which adds its request id). */
export const ErrorBody = z
  .object({
    error: z.string().openapi({ description: "What went wrong and how to fix it" }),
    requestId: z.string().optional().openapi({ description: "The HTTP edge's request id (its refusals: 403 Host, 408, 413, 503)" }),
    issues: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: "A body that failed its schema: the first problems, by field path" }),
  })
  .openapi("Error");

type Method = "get" | "post" | "put" | "patch" | "delete";
const ERROR_REF = { $ref: "#/components/schemas/Error" };
const RETRY_AFTER = { "Retry-After": { description: "Seconds to wait before sending it again", schema: { type: "string" } } };

interface SharedRefusal {
  status: string;
  description: string;
  /** Which methods can get it (every one when absent). */
  methods?: readonly Method[];
  headers?: Record<string, unknown>;
}

/** Methods whose body the edge reads (and limits); of them, all but DELETE must send JSON. */
const READS_BODY: readonly Method[] = ["post", "put", "patch", "delete"];
const SENDS_JSON: readonly Method[] = ["post", "put", "patch"];

const SHARED: readonly SharedRefusal[] = [
  { status: "400", methods: SENDS_JSON, description: "The body is not valid JSON (or ended before its declared length)" },
  {
    status: "401",
    description: "No valid token: send Authorization: Bearer <token> with OPERATOR_TOKEN or a token of API_TOKENS",
    headers: { "WWW-Authenticate": { schema: { type: "string" } } },
  },
  { status: "403", description: "The token lacks this route's scope, the request came from another site, or its Host is not one the gateway serves" },
  { status: "408", description: "The request's headers or body took longer than HTTP_HEADERS_TIMEOUT / HTTP_REQUEST_TIMEOUT" },
  { status: "413", methods: READS_BODY, description: "The body is over the API's limit (refused while it streams)" },
  { status: "415", methods: SENDS_JSON, description: "The body is not sent as JSON (Content-Type: application/json)" },
  { status: "431", description: "The request's headers are too large" },
  { status: "500", description: "The gateway failed to answer (logged with the request; nothing secret is in the answer)" },
  {
    status: "503",
    methods: READS_BODY,
    description: "The gateway is stopping, or too many request bodies are in flight: send it again after Retry-After seconds",
    headers: RETRY_AFTER,
  },
];

type Operation = { responses?: Record<string, { description?: string; headers?: Record<string, unknown>; content?: Record<string, { schema?: unknown }> }> };

/** Adds the shared refusals to every operation of a generated document (in place), and returns it. */
export function withSharedRefusals<T extends { paths?: Record<string, unknown> }>(doc: T): T {
  for (const item of Object.values(doc.paths ?? {}) as Array<Record<string, Operation>>) {
    for (const method of ["get", "post", "put", "patch", "delete"] as const) {
      const op = item[method];
      if (!op) continue;
      op.responses ??= {};
      for (const r of SHARED) {
        if (r.methods && !r.methods.includes(method)) continue;
        const own = op.responses[r.status];
        if (!own) {
          op.responses[r.status] = {
            description: r.description,
            ...(r.headers && { headers: r.headers }),
            content: { "application/json": { schema: ERROR_REF } },
          };
          continue;
        }
        // The route answers this status itself; the shared refusal may still come first, with its own body.
        const json = own.content?.["application/json"];
        if (json?.schema && JSON.stringify(json.schema) !== JSON.stringify(ERROR_REF)) json.schema = { anyOf: [json.schema, ERROR_REF] };
        own.description = `${own.description ?? ""}; or: ${r.description}`;
        if (r.headers) own.headers = { ...r.headers, ...own.headers };
      }
    }
  }
  return doc;
}

/** The document's own route: GET /api/v1/openapi.json answers it (any valid token). */
export const OpenApiDocument = z
  .looseObject({ openapi: z.string(), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.unknown()) })
  .openapi("OpenApiDocument", { description: "This document (OpenAPI 3.1)" });

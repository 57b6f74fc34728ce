import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { isSessionError } from "../../session/errors.js";
import { parseAt, parseDuration, TimingError, type Timing } from "../../runtime/jobs/when.js";
import { AmbiguousChatError, MAX_JOB_TEXT, type JobScope, type JobService } from "./service.js";

/**
 * `POST/GET/DELETE /api/v1/schedules`: scheduled jobs over HTTP, as a
 * sub-app (mounted under /api/v1 behind the `schedule` scope). Every body and
 * answer is a zod schema, so the OpenAPI document is generated from them.
 *
 * A token sees and cancels only the jobs it made (recorded as its name),
 * unless it holds the `admin` scope; any other job, made by another token,
 * in chat, by the agent or the CLI, is answered 404 like a missing one.
 */
const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) }).openapi("ScheduleError");

/** The API caller, as the API server's authentication sets it (structurally: this layer sits below the HTTP one). */
export type ScheduleEnv = { Variables: { principal: { name: string; scopes: ReadonlySet<string> } } };

function scopeOf(c: Context<ScheduleEnv>): { name: string; scope: JobScope } {
  const caller = c.get("principal");
  // Fail closed: mounted anywhere but behind the API server's authentication, nobody is anyone.
  if (!caller) throw new Error("the schedules API answered a request with no authenticated caller: mount it with ApiServer.mount");
  return { name: caller.name, scope: caller.scopes.has("admin") ? { all: true } : { principal: caller.name } };
}

const ConversationRef = z
  .union([
    z.object({ sessionId: z.string().min(1).max(100) }).strict(),
    z
      .object({
        platform: z.string().min(1).max(32),
        chat: z.string().min(1).max(200),
        thread: z.string().min(1).max(200).optional(),
        bot: z.string().min(1).max(200).optional().openapi({ description: "the bot's id, when several of the platform's bots are in the chat" }),
      })
      .strict(),
  ])
  .openapi("ConversationRef", { description: "Any session of the conversation, or the platform's chat (and thread)." });

const NewSchedule = z
  .object({
    conversation: ConversationRef,
    at: z
      .string()
      .max(64)
      .optional()
      .openapi({ description: "once: an ISO 8601 time; without an offset it is read in `timezone`", example: "2027-01-05T09:00:00Z" }),
    every: z.string().max(32).optional().openapi({ description: "repeat: an interval of at least 1m", example: "1d" }),
    cron: z.string().max(120).optional().openapi({ description: "repeat: five cron fields, read in `timezone`", example: "0 9 * * 1-5" }),
    timezone: z.string().max(64).optional().openapi({ description: "IANA zone (default: the chat's /tz, else DEFAULT_TIMEZONE)", example: "Europe/Paris" }),
    action: z.enum(["text", "agent"]).default("text").openapi({ description: "text: send it as it is; agent: run it as a prompt then and send the answer" }),
    text: z.string().min(1).max(MAX_JOB_TEXT),
  })
  .strict()
  .refine((b) => [b.at, b.every, b.cron].filter((v) => v !== undefined).length === 1, { message: "give exactly one of at, every or cron" })
  .openapi("NewSchedule");

const Schedule = z
  .object({
    id: z.string(),
    conversation: z.object({ platform: z.string(), botId: z.string(), chat: z.string(), thread: z.string().optional() }),
    schedule: z.object({ kind: z.string(), spec: z.string(), timezone: z.string(), description: z.string() }),
    action: z.string(),
    text: z.string(),
    status: z.string().openapi({ description: "active, paused (3 failures in a row), done or cancelled" }),
    nextRunAt: z.string().nullable(),
    lastRunAt: z.string().nullable(),
    lastStatus: z.string().nullable().openapi({ description: "delivered (the platform returned a message id), failed or missed" }),
    lastError: z.string().nullable(),
    failures: z.number().int(),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .openapi("Schedule");

const Run = z.object({ dueAt: z.string(), status: z.string(), error: z.string().nullable(), deliveryId: z.string().nullable() }).openapi("ScheduleRun");
const IdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });

const create = createRoute({
  method: "post",
  path: "/",
  summary: "Schedule a message into a conversation",
  request: { body: { content: { "application/json": { schema: NewSchedule } }, required: true } },
  responses: {
    201: json(Schedule, "the job"),
    400: json(ErrorBody, "invalid"),
    404: json(ErrorBody, "no such conversation"),
    409: json(ErrorBody, "several bots are in that chat: name one with conversation.bot"),
  },
});
const list = createRoute({
  method: "get",
  path: "/",
  summary: "List scheduled jobs: this token's (every caller's with the admin scope); open ones, or ?all=true for every status",
  request: { query: z.object({ all: z.enum(["true", "false"]).optional() }) },
  responses: { 200: json(z.object({ schedules: z.array(Schedule) }), "the jobs"), 400: json(ErrorBody, "all is neither true nor false") },
});
const show = createRoute({
  method: "get",
  path: "/{id}",
  summary: "One job and its recent runs",
  request: { params: IdParam },
  responses: {
    200: json(Schedule.extend({ runs: z.array(Run) }), "the job"),
    400: json(ErrorBody, "the id is longer than 100 characters"),
    404: json(ErrorBody, "no such job (or another caller's)"),
  },
});
const cancel = createRoute({
  method: "delete",
  path: "/{id}",
  summary: "Cancel a job",
  request: { params: IdParam },
  responses: {
    200: json(Schedule, "the cancelled job"),
    400: json(ErrorBody, "the id is longer than 100 characters"),
    404: json(ErrorBody, "no such job (or another caller's)"),
    409: json(ErrorBody, "not open (done or cancelled already)"),
  },
});

const fail = (code: string, message: string) => ({ error: { code, message } });

/** The sub-app, with paths relative to where it is mounted: app.ts mounts it at /api/v1/schedules for the `schedule` scope. */
export function scheduleApi(jobs: JobService): OpenAPIHono<ScheduleEnv> {
  const app = new OpenAPIHono<ScheduleEnv>({
    // A body that fails its schema gets one clear 400, never a stack.
    defaultHook: (r, c) => {
      if (!r.success) return c.json(fail("Invalid", r.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ")), 400);
    },
  });
  app.openapi(create, async (c) => {
    const b = c.req.valid("json");
    try {
      const target = await jobs.locate(b.conversation);
      const timezone = b.timezone ?? (await jobs.timezoneOf(target.conversation));
      let timing: Timing;
      // Without an offset, Date.parse would read it in the server's zone: it is read in the job's (parseAt).
      if (b.at !== undefined) timing = parseAt(b.at, timezone, jobs.now());
      else if (b.every !== undefined) {
        const ms = parseDuration(b.every) ?? (/^\d+$/.test(b.every) ? Number(b.every) : undefined);
        if (ms === undefined) return c.json(fail("Invalid", `every: "${b.every}" is not an interval (e.g. 30m, 1d)`), 400);
        timing = { kind: "every", spec: String(ms), timezone };
      } else timing = { kind: "cron", spec: b.cron!, timezone };
      const { name } = scopeOf(c);
      const job = await jobs.create({ target, timing, action: b.action, text: b.text, createdBy: `api:${name}`, principal: name });
      return c.json(job, 201);
    } catch (e) {
      if (e instanceof AmbiguousChatError) return c.json(fail("Conflict", e.message), 409);
      if (e instanceof TimingError || isSessionError(e, "Invalid")) return c.json(fail("Invalid", e.message), 400);
      if (isSessionError(e, "NotFound")) return c.json(fail("NotFound", e.message), 404);
      throw e;
    }
  });
  app.openapi(list, async (c) => c.json({ schedules: await jobs.list({ all: c.req.valid("query").all === "true", scope: scopeOf(c).scope }) }, 200));
  app.openapi(show, async (c) => {
    const { id } = c.req.valid("param");
    try {
      const job = await jobs.get(id, scopeOf(c).scope);
      const runs = (await jobs.store.runs(id)).map((r) => ({ dueAt: r.dueAt.toISOString(), status: r.status, error: r.error, deliveryId: r.deliveryId }));
      return c.json({ ...job, runs }, 200);
    } catch (e) {
      if (isSessionError(e, "NotFound")) return c.json(fail("NotFound", e.message), 404);
      throw e;
    }
  });
  app.openapi(cancel, async (c) => {
    const { id } = c.req.valid("param");
    try {
      return c.json(await jobs.cancel(id, scopeOf(c).scope), 200);
    } catch (e) {
      if (isSessionError(e, "NotFound")) return c.json(fail("NotFound", e.message), 404);
      if (isSessionError(e, "Invalid")) return c.json(fail("Invalid", e.message), 409);
      throw e;
    }
  });
  return app;
}

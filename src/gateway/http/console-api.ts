import { speakerFromMeta, speakerName } from "../../runtime/speaker.js";
import { stoppedFromMeta } from "../../runtime/stop.js";
import { METADATA_KEYS } from "../../agent/factory.js";
import type { OutEvent } from "../../runtime/events.js";
import type { Runner } from "../../runtime/runner.js";
import { isSessionError } from "../../session/errors.js";
import { sessionSummary, type Info } from "../../session/info.js";
import type { Registry } from "../../session/registry.js";
import { bindingIdentity, type BindingRecord, type SessionStore } from "../../store/sessions.js";
import type { MessageRecord, TranscriptStore } from "../../store/transcript.js";
import type { HttpHandler, HttpResponse } from "../adapter.js";
import { json } from "./server.js";

export interface ConsoleApiDeps {
  registry: Registry;
  sessions: SessionStore;
  transcript: TranscriptStore;
  runner: Runner;
}

export interface ConsoleApiOptions {
  /** Interval of SSE keep-alive comments. Default 15 s. */
  keepAliveMs?: number;
}

/** Transcript messages shown with a session. */
const TRANSCRIPT_LIMIT = 200;
/** Bindings read when filtering by channel (the store has no channel filter). */
const BINDING_SCAN = 1000;
/** Only the model settings are shown from a session's metadata: it is free-form, and an operator page is no place for whatever else lands there. */
const SHOWN_METADATA = new Set<string>(Object.values(METADATA_KEYS));

const intParam = (v: string | null, fallback: number, max: number): number => {
  const n = v === null || v === "" ? fallback : Number(v);
  return Number.isInteger(n) && n > 0 ? Math.min(n, max) : fallback;
};

const flag = (v: string | null): boolean => v !== null && ["1", "true", "yes", "on"].includes(v.toLowerCase());

function binding(b: BindingRecord) {
  return { ...bindingIdentity(b), sessionId: b.sessionId, version: b.version, updatedAt: b.updatedAt.toISOString() };
}

/** A transcript entry for the page; a user entry names its speaker (the transcript records who said it), an answer cut by /stop says so. */
const message = (m: MessageRecord) => {
  const speaker = m.role === "user" ? speakerName(speakerFromMeta(m.meta)) : undefined;
  const stopped = m.role === "assistant" && stoppedFromMeta(m.meta);
  return { seq: m.seq, role: m.role, content: m.content, createdAt: m.createdAt.toISOString(), ...(speaker && { speaker }), ...(stopped && { stopped }) };
};

/** What /api/events sends: the event without routing extras (Slack team ids and the like are not the page's business). */
function liveEvent(e: OutEvent) {
  const to =
    "replyTo" in e && e.replyTo
      ? { platform: e.replyTo.platform, chatId: e.replyTo.chatId, ...(e.replyTo.threadId !== undefined && { threadId: e.replyTo.threadId }) }
      : undefined;
  const base = { kind: e.kind, sessionId: e.sessionId, at: new Date().toISOString(), ...(to && { replyTo: to }) };
  if (e.kind === "lifecycle") return { ...base, phase: e.phase, ...(e.detail && { detail: e.detail }) };
  if (e.kind === "turn-complete") return { ...base, turnId: e.turnId, outcome: e.outcome };
  return base;
}

/**
 * The operator API behind the web console: sessions, bindings, transcripts,
 * live lifecycle events. Read-only, JSON only, and unscoped (an operator sees
 * every conversation), so it must only be reachable by operators.
 */
export function mountConsoleApi(
  route: (method: "GET" | "POST", path: string, handler: HttpHandler) => void,
  deps: ConsoleApiDeps,
  opts: ConsoleApiOptions = {},
): void {
  const { registry, sessions, transcript, runner } = deps;
  const keepAliveMs = opts.keepAliveMs ?? 15_000;
  const clients = new Set<(chunk: string) => boolean>();

  // One sink for the life of the runner; pages come and go as clients of it.
  runner.withSink(["lifecycle", "turn-complete"], (_id, e) => {
    if (clients.size === 0) return;
    const frame = `data: ${JSON.stringify(liveEvent(e))}\n\n`;
    for (const write of clients) write(frame);
  });

  route("GET", "/api/sessions", async (req) => {
    const list = await registry.listAll({ includeArchived: flag(req.query.get("archived")), limit: intParam(req.query.get("limit"), 50, 500) });
    return json(200, { sessions: list.map(sessionSummary) });
  });

  route("GET", "/api/sessions/:id", async (req) => {
    const id = req.params.id ?? "";
    let info: Info;
    try {
      info = await registry.getUnscoped(id);
    } catch (e) {
      if (isSessionError(e, "NotFound")) return json(404, { error: `no session ${id}: pick one from GET /api/sessions?archived=1` });
      throw e;
    }
    const [messages, bound, total] = await Promise.all([transcript.recent(id, TRANSCRIPT_LIMIT), sessions.bindingsForSession(id), transcript.count(id)]);
    const metadata = Object.fromEntries(Object.entries(info.metadata).filter(([k]) => SHOWN_METADATA.has(k)));
    return json(200, { session: { ...sessionSummary(info), metadata }, messages: messages.map(message), messageCount: total, bindings: bound.map(binding) });
  });

  route("GET", "/api/bindings", async (req) => {
    const channel = req.query.get("channel");
    const limit = intParam(req.query.get("limit"), 100, BINDING_SCAN);
    const rows = channel
      ? (await sessions.listBindings({ limit: BINDING_SCAN })).filter((b) => b.channel === channel).slice(0, limit)
      : await sessions.listBindings({ limit });
    return json(200, { bindings: rows.map(binding) });
  });

  route(
    "GET",
    "/api/events",
    async (): Promise<HttpResponse> => ({
      status: 200,
      headers: { "content-type": "text/event-stream; charset=utf-8", "x-accel-buffering": "no" },
      stream: (write, onClose) => {
        const timer = setInterval(() => write(": keep-alive\n\n"), keepAliveMs);
        // An open page must not keep the process alive at shutdown.
        timer.unref();
        clients.add(write);
        write("retry: 2000\n: connected\n\n");
        onClose(() => {
          clearInterval(timer);
          clients.delete(write);
        });
      },
    }),
  );
}

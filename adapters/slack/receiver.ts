/**
 * HTTP mode: a custom Bolt Receiver served on the gateway's one HTTP server.
 *
 * Why not Bolt's HTTPReceiver or ExpressReceiver: they start their own
 * http.Server on their own port. Switchboard serves every webhook, health
 * check and metric from the gateway's single server (ctx.route), so this
 * receiver takes the raw request from there, does what HTTPReceiver would
 * (signature check, url_verification, retry headers, body parsing), refuses
 * a signed but malformed event_callback (400, malformed-event.ts; only after
 * the signature is verified) and hands the body to app.processEvent().
 *
 * Acks: every delivery, a retry (X-Slack-Retry-Num) as much as the first, is
 * answered only after processEvent() resolves, that is after the listeners
 * have recorded the event with ctx.inbound() (see ack.ts); the turn itself
 * runs in the gateway's background. A retry may be the last copy Slack ever
 * sends: acknowledging it before it is recorded would lose it for good when
 * the record fails. A redelivery of an event already recorded is a duplicate
 * the gateway drops by eventId, and is acked as soon as that is known. Slack
 * gives 3 s; recording takes milliseconds, and a guard answers 503 at
 * ACK_DEADLINE_MS so Slack redelivers rather than count a silent timeout
 * against the app. A failure to record answers 500, logged.
 */
import type { App, Receiver } from "@slack/bolt";
import type { Logger } from "../../src/log.js";
import type { HttpRequest, HttpResponse } from "../types.js";
import { AckGate } from "./ack.js";
import { malformedEventCallback } from "./malformed-event.js";
import { verifySignature } from "./signature.js";

/** Below Slack's 3 s, leaving room for the network. */
export const ACK_DEADLINE_MS = 2500;

export interface HttpReceiverOptions {
  signingSecret: string;
  log: Logger;
  now?: () => number;
  /** Counts an error the receiver handled (switchboard_internal_errors_total{where}). */
  onError?: (where: string, err: unknown) => void;
}

export class SlackHttpReceiver implements Receiver {
  private app: App | undefined;
  private accepting = false;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly o: HttpReceiverOptions) {}

  init(app: App): void {
    this.app = app;
  }

  async start(): Promise<void> {
    this.accepting = true;
  }

  /** Stops taking events (503, so Slack redelivers to whoever runs next) and waits briefly for in-flight records. */
  async stop(): Promise<void> {
    this.accepting = false;
    await Promise.race([Promise.allSettled([...this.inFlight]), delay(ACK_DEADLINE_MS)]);
  }

  /** The ctx.route handler for POST /slack/events (and /slack/commands). */
  readonly handle = async (req: HttpRequest): Promise<HttpResponse> => {
    const check = verifySignature(this.o.signingSecret, req.headers, req.rawBody, this.o.now ? Math.floor(this.o.now() / 1000) : undefined);
    if (!check.ok) {
      this.o.log.warn({ path: req.path, reason: check.reason }, "refused a Slack request with a bad signature");
      return { status: 401, body: "invalid signature" };
    }
    const body = parseBody(req);
    if (!body) return { status: 400, body: "unreadable body" };
    if (malformedEventCallback(body))
      return { status: 400, body: "malformed event_callback: event must be an object with a type, and its ids and text strings" };
    if (body.type === "url_verification" && typeof body.challenge === "string") {
      return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ challenge: body.challenge }) };
    }
    if (body.ssl_check !== undefined) return { status: 200 };
    const app = this.app;
    if (!this.accepting || !app) return { status: 503, body: "not accepting events" };

    const retryNum = intHeader(req.headers["x-slack-retry-num"]);
    const retryReason = strHeader(req.headers["x-slack-retry-reason"]);
    const gate = new AckGate();
    const run = app.processEvent({
      body,
      ack: gate.ack,
      ...(retryNum !== undefined ? { retryNum } : {}),
      ...(retryReason !== undefined ? { retryReason } : {}),
    });
    this.track(run, body);

    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), ACK_DEADLINE_MS);
      timer.unref();
    });
    try {
      const outcome = await Promise.race([run.then(() => "done" as const), deadline]);
      if (outcome === "late") {
        this.o.log.warn({ slackEventId: body.event_id, retryNum }, "recording a Slack event took too long; answering 503 so Slack redelivers it");
        return { status: 503, body: "try again" };
      }
      return gate.toHttp();
    } catch (err) {
      // Not recorded (the store is down): a non-2xx makes Slack deliver it again.
      this.o.onError?.("slack-receiver", err);
      this.o.log.error(
        { slackEventId: body.event_id, retryNum, err: err instanceof Error ? { name: err.name, code: (err as { code?: unknown }).code } : typeof err },
        "a Slack event could not be recorded; answering 500 so Slack delivers it again",
      );
      return { status: 500, body: "could not record the event" };
    } finally {
      clearTimeout(timer);
    }
  };

  /** Keeps in-flight records for stop(); their failures are logged by handle(). */
  private track(run: Promise<void>, _body: Record<string, unknown>): void {
    const p = run.catch(() => undefined);
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }
}

function parseBody(req: HttpRequest): Record<string, unknown> | undefined {
  const ct = String(req.headers["content-type"] ?? "").toLowerCase();
  const text = req.rawBody.toString("utf8");
  try {
    if (ct.includes("application/x-www-form-urlencoded")) {
      const fields = Object.fromEntries(new URLSearchParams(text));
      // Interactive payloads (buttons, modals) arrive as payload=<json>.
      if (typeof fields.payload === "string") return asObject(JSON.parse(fields.payload));
      return fields;
    }
    return asObject(JSON.parse(text));
  } catch {
    return undefined;
  }
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function strHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function intHeader(v: string | string[] | undefined): number | undefined {
  const s = strHeader(v);
  return s !== undefined && /^\d{1,6}$/.test(s) ? Number(s) : undefined;
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

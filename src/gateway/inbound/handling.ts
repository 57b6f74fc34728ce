import type { Config } from "../../config.js";
import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { RunHandle } from "../../runtime/runner.js";
import type { InboundRecord } from "../../store/inbound.js";
import { inContext, type TraceCarrier } from "../../telemetry/index.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayMetrics } from "../metrics.js";
import { handledWithoutTurn, type Arrivals } from "./arrivals.js";
import { readRecorded, type RecordedDeps } from "./replay.js";
import { storedTrace } from "./trace.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref?.());

/** What handing recorded events to the runner reads of the gateway. */
export interface HandlingDeps {
  policy: Pick<Config, "INBOUND_TTL">;
  metrics: GatewayMetrics;
  log: Logger;
  arrivals: Arrivals;
  /** Handling waits for start() to finish, so events replayed from before a restart go first. */
  gate(): Promise<void>;
  stopping(): boolean;
  recordedDeps(): RecordedDeps;
  dispatch(env: InboundEnvelope, inboundId: string, trace?: TraceCarrier): Promise<RunHandle | undefined>;
  unanswered(env: InboundEnvelope, inboundId: string, why: string): Promise<void>;
}

/**
 * Hands one event to the runner. If that fails (the store is failing), it
 * is retried here with bounded backoff, and the chat's later events wait
 * behind it (this runs in the chat's chain): order is kept. At the event's
 * INBOUND_TTL it is given up with a notice in its chat; while stopping it
 * stays unhandled and is replayed at the next start.
 */
export async function handleInbound(h: HandlingDeps, env: InboundEnvelope, inboundId: string, trace?: TraceCarrier): Promise<void> {
  await h.gate();
  const deadline = env.occurredAt.getTime() + h.policy.INBOUND_TTL;
  for (let attempt = 1; ; attempt++) {
    try {
      const handle = await h.dispatch(env, inboundId, trace);
      // Consumed and context-only events complete no turn: stop tracking them.
      if (!handle || handle.accepted === "consumed" || handle.accepted === "context") h.arrivals.handled(inboundId, handledWithoutTurn(handle));
      // A message dropped by /stop or shutdown completes no turn either.
      else void handle.done.finally(() => h.arrivals.forget(inboundId));
      if (handle) watchCommit(h, handle, env, inboundId);
      return;
    } catch (err) {
      h.metrics.internalErrors.inc({ where: "inbound-handle" });
      const wait = Math.min(5000, 50 * 2 ** Math.min(attempt - 1, 10));
      if (h.stopping()) {
        h.arrivals.forget(inboundId);
        h.log.error(
          { platform: env.platform, inboundId, err: errInfo(err) },
          "could not handle an inbound event while stopping; it is replayed at the next start",
        );
        return;
      }
      if (Date.now() + wait >= deadline) {
        h.arrivals.forget(inboundId);
        await h.unanswered(env, inboundId, `could not be handled: ${String(errInfo(err).message ?? "error")}`);
        return;
      }
      h.log[attempt >= 5 ? "error" : "warn"](
        { platform: env.platform, inboundId, attempt, retryInMs: wait, err: errInfo(err) },
        "could not handle an inbound event; retrying (its chat's later events wait)",
      );
      await sleep(wait);
    }
  }
}

/**
 * Shared mode: takes one recorded event into this process's runner (under
 * the conversation's lease); the promise settles once it is committed.
 */
export async function takeRecorded(h: HandlingDeps, rec: InboundRecord): Promise<{ done: Promise<unknown> } | undefined> {
  const env = await readRecorded(h.recordedDeps(), rec);
  if (typeof env === "string") return undefined;
  if (!h.arrivals.has(rec.id)) h.arrivals.add(rec.id, env);
  // The trace the recording process started goes on here, whichever process recorded it.
  const trace = storedTrace(rec);
  const handle = await inContext(trace, () => h.dispatch(env, rec.id, trace)).catch((err: unknown) => {
    h.arrivals.forget(rec.id);
    throw err;
  });
  if (!handle || handle.accepted === "consumed" || handle.accepted === "context") h.arrivals.handled(rec.id, handledWithoutTurn(handle));
  if (handle) {
    watchCommit(h, handle, env, rec.id);
    void handle.done.finally(() => h.arrivals.forget(rec.id));
  }
  return handle ? { done: handle.done } : undefined;
}

/** A turn that could not be committed before the event's TTL: its chat is told. */
function watchCommit(h: HandlingDeps, handle: RunHandle, env: InboundEnvelope, inboundId: string): void {
  void handle.done.then((outcome) => {
    if (outcome !== "unanswered") return;
    h.arrivals.forget(inboundId);
    return h.unanswered(env, inboundId, "its turn could not be committed");
  });
}

import { randomUUID } from "node:crypto";
import { Counter, type Registry as MetricsRegistry } from "prom-client";
import type { Agent } from "../../agent/types.js";
import { errInfo, type Logger } from "../../log.js";
import type { Conversation } from "../../runtime/events.js";
import { formatLocal, nextAfter, type Timing } from "../../runtime/jobs/when.js";
import type { Info } from "../../session/info.js";
import type { Registry } from "../../session/registry.js";
import { codecs } from "../../store/codecs.js";
import type { DeliveryStore } from "../../store/deliveries.js";
import { schedulerAgentTurn } from "./agent-turn.js";
import type { CallPlace } from "../usage/place.js";
import type { JobRecord, JobStore, RunCompletion, RunRecord } from "../../store/jobs.js";
import { PAUSE_AFTER_FAILURES } from "../../store/jobs.js";
import { inSpan } from "../../telemetry/index.js";

export interface JobRunnerOptions {
  store: JobStore;
  registry: Registry;
  deliveries: Pick<DeliveryStore, "find">;
  /** Sends one delivery row now (the gateway's Outbound); its outcome is read back from the ledger. */
  deliver(deliveryId: string): Promise<void>;
  /** The agent for an agent-prompt job's turn in `session` (its scheduler session), made at `place` (the job's chat), and its system prompt. */
  agent?(session: Info, place: CallPlace): { agent: Agent; system: string };
  /** Whether a platform and bot has an adapter in this process (a job for one that has none fails with that reason). */
  canDeliver?(platform: string, botId: string): boolean;
  /** RECORD_RETENTION: finished runs older than this are pruned (500 a round). */
  retentionMs?: number;
  /** Told when a run wrote into a conversation's transcript (live windows are dropped). */
  onTranscript?(sessionId: string): void;
  /** Tells the operators (log, and a DM to ADMIN_USERS where possible). */
  alertOperators?(text: string): Promise<void>;
  log: Logger;
  metrics?: MetricsRegistry;
  /** Told of every error caught here (counted in /metrics as internal errors). */
  onError?(where: string): void;
  /** This process's id: the owner of its claims. */
  owner: string;
  /** Several processes share the database: only claims older than staleMs are taken over. */
  shared: boolean;
  /** SCHEDULE_MISFIRE_GRACE: a due time missed by more than this is skipped and recorded as missed. */
  misfireGraceMs: number;
  staleMs?: number;
  agentTimeoutMs?: number;
  tickMs?: number;
  /** Jobs claimed per tick. */
  batch?: number;
  now?: () => Date;
}

/**
 * Runs due jobs exactly once. Each tick claims due jobs in the database (one
 * process wins each due time), runs them, and commits each run in one
 * transaction with its delivery row; the outbound ledger then sends it, and a
 * run is `delivered` only once that delivery is marked sent with the
 * platform's message id (`failed` with the reason otherwise). A crash during
 * a run leaves the claim to go stale: the due time is tried once more, then
 * recorded failed. A due time missed by more than the misfire grace (the
 * gateway was down) is skipped and recorded `missed`; one within it runs once.
 */
export class JobRunner {
  readonly runs: Counter<"status">;
  readonly #running = new Map<string, Promise<void>>();
  readonly #started = new Date();
  #timer: NodeJS.Timeout | undefined;
  #claimTimer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #stopped = false;
  #lastPrune = 0;
  /** Agent turns in progress: a stop abandons them (nothing is committed; the next start runs the due time again). */
  readonly #turns = new Set<AbortController>();

  constructor(readonly opts: JobRunnerOptions) {
    this.runs = new Counter({
      name: "switchboard_job_runs_total",
      help: "Scheduled job runs by status (delivered, failed, missed).",
      labelNames: ["status"] as const,
      registers: opts.metrics ? [opts.metrics] : [],
    });
  }

  #now(): Date {
    return this.opts.now?.() ?? new Date();
  }

  start(): void {
    if (this.#timer) return;
    this.#stopped = false;
    this.#timer = setInterval(() => void this.tick(), this.opts.tickMs ?? 1000);
    this.#timer.unref();
    const stale = this.opts.staleMs ?? 30_000;
    this.#claimTimer = setInterval(
      () => {
        if (!this.#running.size) return;
        this.opts.store
          .renewClaims([...this.#running.keys()], this.opts.owner)
          .catch((err) => this.#error("job-claims-renew", err, "renewing job claims failed; another process may run them after the stale period"));
      },
      Math.max(250, Math.floor(stale / 3)),
    );
    this.#claimTimer.unref();
    void this.tick();
  }

  /** Stops ticking and waits for the runs in progress (a run cut short is retried by the next start). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    clearInterval(this.#claimTimer);
    this.#timer = undefined;
    for (const a of this.#turns) a.abort(new Error("the gateway is stopping"));
    await this.#ticking;
    await Promise.allSettled([...this.#running.values()]);
  }

  /** Claims and runs what is due, then settles runs whose delivery the ledger has decided. Resolves when this round is done. */
  tick(): Promise<void> {
    if (this.#ticking) return this.#ticking;
    this.#ticking = this.#round().finally(() => (this.#ticking = undefined));
    return this.#ticking;
  }

  async #round(): Promise<void> {
    try {
      const now = this.#now();
      const stale = this.opts.staleMs ?? 30_000;
      // Alone on the database, a claim made before this process started belongs to a dead one.
      const staleBefore = new Date(this.opts.shared ? now.getTime() - stale : Math.max(this.#started.getTime(), now.getTime() - stale));
      for (;;) {
        if (this.#stopped) break;
        const claimed = await this.opts.store.claimDue(this.opts.owner, now, staleBefore, this.opts.batch ?? 100);
        const fresh = claimed.filter((j) => !this.#running.has(j.id));
        await Promise.all(fresh.map((j) => this.#track(j)));
        if (claimed.length < (this.opts.batch ?? 100)) break;
      }
      await this.reconcile();
      if (this.opts.retentionMs && Date.now() - this.#lastPrune > 3_600_000) {
        this.#lastPrune = Date.now();
        await this.opts.store.pruneRuns(new Date(now.getTime() - this.opts.retentionMs), 500);
      }
    } catch (err) {
      this.#error("job-tick", err, "a scheduler round failed; the next one tries again");
    }
  }

  #track(job: JobRecord): Promise<void> {
    // Each run is its own trace (src/telemetry): its agent turn's model calls and its send are children.
    const attributes = { "switchboard.job.id": job.id, "switchboard.job.action": job.action, "switchboard.platform": job.platform };
    const p = inSpan(`job ${job.action}`, { root: true, attributes }, () => this.#run(job))
      .catch((err) => this.#error("job-run", err, "a job run failed; its claim goes stale and the due time is tried once more", { jobId: job.id }))
      .finally(() => this.#running.delete(job.id));
    this.#running.set(job.id, p);
    return p;
  }

  async #run(job: JobRecord): Promise<void> {
    const { store, log } = this.opts;
    const due = job.nextRunAt!;
    const run = await store.startRun(randomUUID(), job.id, due, this.opts.owner);
    const now = this.#now();
    const timing: Timing = { kind: job.kind as Timing["kind"], spec: job.spec, timezone: job.timezone };
    // The next due time after now: runs missed while down collapse into this one.
    const next = nextAfter(timing, new Date(Math.max(now.getTime(), due.getTime())), job.kind === "every" ? due : undefined);
    const base = { job, run, next, messages: [] };
    if (job.claimAttempts > 2)
      return void (await this.#finish({ ...base, status: "failed", error: "the gateway stopped twice while running it (it was tried twice)" }));
    if (now.getTime() - due.getTime() > this.opts.misfireGraceMs) {
      return void (await this.#finish({
        ...base,
        status: "missed",
        error: `the gateway was not running at ${formatLocal(due, job.timezone)} (more than SCHEDULE_MISFIRE_GRACE ago)`,
      }));
    }
    if (this.opts.canDeliver && !this.opts.canDeliver(job.platform, job.botId)) {
      return void (await this.#finish({ ...base, status: "failed", error: `no ${job.platform} adapter for bot ${job.botId} is running` }));
    }
    const conversation: Conversation = codecs.jobTarget.decode(job.target, job.id);
    // The binding as it is now: a /new since the job was made moved it to the fresh session.
    const session = await this.opts.registry.resolveChatChannel(conversation);
    let text = job.text;
    const messages: RunCompletion["messages"] = [];
    if (job.action === "agent") {
      const answered = await schedulerAgentTurn(this.opts, job, session, conversation, { turns: this.#turns, stopped: () => this.#stopped });
      if ("error" in answered) return void (await this.#finish({ ...base, status: "failed", error: answered.error }));
      text = answered.text;
      messages.push(
        { sessionId: answered.schedulerId, role: "user", content: job.text },
        { sessionId: answered.schedulerId, role: "assistant", content: text },
      );
    }
    messages.push({ sessionId: session.id, role: "assistant", content: text, meta: JSON.stringify({ origin: "schedule", jobId: job.id, runId: run.id }) });
    const deliveryId = randomUUID();
    // A scheduled message is never sent later than the misfire grace after its due time.
    const expiresAt = new Date(Math.max(due.getTime(), now.getTime()) + Math.max(this.opts.misfireGraceMs, 60_000));
    const committed = await this.#finish({ ...base, messages, status: "sending", delivery: { id: deliveryId, sessionId: session.id, text, expiresAt } });
    if (!committed) return;
    this.opts.onTranscript?.(session.id);
    log.info({ jobId: job.id, runId: run.id, dueAt: due.toISOString(), deliveryId }, "scheduled job ran; its message is being delivered");
    try {
      await this.opts.deliver(deliveryId);
    } finally {
      await this.#settleRun(run.id, deliveryId);
    }
  }

  async #finish(c: RunCompletion): Promise<boolean> {
    const ok = await this.opts.store.complete(c, this.opts.owner);
    if (!ok) {
      this.opts.log.warn({ jobId: c.job.id, runId: c.run.id }, "a job's claim was taken over before its run committed; the other process runs it");
      return false;
    }
    if (c.status !== "sending") {
      this.runs.inc({ status: c.status });
      const level = c.status === "missed" ? "warn" : "error";
      this.opts.log[level](
        { jobId: c.job.id, runId: c.run.id, dueAt: c.run.dueAt.toISOString(), reason: c.error },
        c.status === "missed" ? "a scheduled job's due time was missed" : "a scheduled job failed",
      );
      if (c.status === "failed") {
        const job = await this.opts.store.get(c.job.id);
        if (job?.status === "paused" && job.failures === PAUSE_AFTER_FAILURES) await this.#paused(job.id, job.failures, c.error ?? "");
      }
    }
    return true;
  }

  /** Settles one run from its delivery's state in the ledger (nothing yet if the ledger has not decided). */
  async #settleRun(runId: string, deliveryId: string): Promise<void> {
    const d = await this.opts.deliveries.find(deliveryId);
    const verdict = verdictOf(d ? { status: d.status, lastError: d.lastError, platformMessageId: d.platformMessageId } : undefined);
    if (verdict) await this.#settle(runId, verdict);
  }

  async #settle(runId: string, v: { status: "delivered" | "failed"; error: string | null }): Promise<void> {
    const r = await this.opts.store.settle(runId, v.status, v.error);
    if (!r.settled) return;
    this.runs.inc({ status: v.status });
    if (v.status === "failed")
      this.opts.log.error({ jobId: r.jobId, runId, reason: v.error, failuresInARow: r.failures }, "a scheduled job's message was not delivered");
    if (r.paused) await this.#paused(r.jobId, r.failures, v.error ?? "");
  }

  /** Once per pause (the store says which call paused it): the operators are told. */
  async #paused(jobId: string, failures: number, reason: string): Promise<void> {
    const text = `Scheduled job ${jobId} failed ${failures} times in a row and is paused (last reason: ${reason}). Check it with: switchboard schedule list`;
    this.opts.log.error({ jobId, failures, reason }, "a scheduled job failed 3 times in a row and was paused; operators are told");
    try {
      await this.opts.alertOperators?.(text);
    } catch (err) {
      this.#error("job-alert", err, "could not tell the operators about a paused job", { jobId });
    }
  }

  /** Runs whose delivery the ledger has decided since (after a restart, or a retried send) get their status. */
  async reconcile(): Promise<void> {
    for (const r of await this.opts.store.sending()) {
      // A delivery no adapter takes stays pending: past its expiry, the run has failed.
      const overdue =
        (r.deliveryStatus === "pending" || r.deliveryStatus === "sending") && r.deliveryExpiresAt && r.deliveryExpiresAt.getTime() < Date.now() - 60_000;
      const verdict = overdue
        ? { status: "failed" as const, error: `not delivered in time (still ${r.deliveryStatus} past its expiry)` }
        : verdictOf(r.deliveryStatus === null ? undefined : { status: r.deliveryStatus, lastError: r.deliveryError, platformMessageId: r.platformMessageId });
      if (verdict) await this.#settle(r.id, verdict);
    }
  }

  /** Runs by status since this process started (the /metrics counter). */
  async counts(): Promise<Record<string, number>> {
    const m = await this.runs.get();
    return Object.fromEntries(m.values.map((v) => [String(v.labels.status), v.value]));
  }

  #error(where: string, err: unknown, msg: string, extra: Record<string, unknown> = {}): void {
    this.opts.onError?.(where);
    this.opts.log.error({ where, ...extra, err: errInfo(err) }, msg);
  }

  stats(): { running: number } {
    return { running: this.#running.size };
  }
}

/** The ledger's word on a run: delivered only with the platform's message id. Undefined: not decided yet. */
function verdictOf(
  d: { status: string; lastError: string | null; platformMessageId: string | null } | undefined,
): { status: "delivered" | "failed"; error: string | null } | undefined {
  if (!d) return { status: "failed", error: "its delivery record is gone" };
  if (d.status === "sent")
    return d.platformMessageId ? { status: "delivered", error: null } : { status: "failed", error: "the platform returned no message id" };
  if (d.status === "failed") return { status: "failed", error: d.lastError ?? "the platform refused it" };
  if (d.status === "expired") return { status: "failed", error: `not delivered in time (${d.lastError ?? "expired"})` };
  return undefined;
}

export type { RunRecord };

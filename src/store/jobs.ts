import { type Selectable, sql } from "kysely";
import type { Database } from "./db.js";
import type { DB, QueryBuilder, Sql } from "./sql.js";

/**
 * Scheduled jobs and their runs. A due job is *claimed* with one conditional
 * UPDATE (free, or its claim stale), so of several processes on one database
 * exactly one runs each due time; the run row is unique per job and due time.
 * A text job's delivery, its transcript entry, its run and the job's next due
 * time are written in ONE transaction (`complete`): a crash before it leaves
 * the claim to go stale and the due time is run again (at most once more), a
 * crash after it leaves a pending delivery that the outbound recovery sends.
 */
export type JobStatus = "active" | "paused" | "done" | "cancelled";
export type RunStatus = "running" | "sending" | "delivered" | "failed" | "missed";

/** A scheduled job's row (the generated type, with its status narrowed). */
export type JobRecord = Omit<Selectable<DB["ScheduledJob"]>, "status"> & { status: JobStatus };

/** One run of a job's due time (the generated type, with its status narrowed). */
export type RunRecord = Omit<Selectable<DB["JobRun"]>, "status"> & { status: RunStatus };

export type NewJob = Omit<
  JobRecord,
  "failures" | "lastRunAt" | "lastStatus" | "lastError" | "claimOwner" | "claimedAt" | "claimAttempts" | "createdAt" | "updatedAt" | "sessionId" | "principal"
> & { principal?: string | null };

const jobOf = (r: Selectable<DB["ScheduledJob"]>): JobRecord => ({ ...r, status: r.status as JobStatus });
const runOf = <T extends { status: string }>(r: T): T & { status: RunStatus } => ({ ...r, status: r.status as RunStatus });

/** What one finished run writes, together. */
export interface RunCompletion {
  job: JobRecord;
  run: RunRecord;
  /** The message to send into the conversation (a pending delivery row), if any. */
  delivery?: { id: string; sessionId: string; text: string; expiresAt: Date };
  /** Transcript entries: the conversation's (the bot's message) and the scheduler session's. */
  messages: Array<{ sessionId: string; role: "user" | "assistant"; content: string; meta?: string }>;
  /** The run's state now: `sending` (a delivery carries it), or `failed`/`missed` with the reason. */
  status: "sending" | "failed" | "missed";
  error?: string;
  /** The job's next due time (null: none; the job is done). */
  next: Date | null;
}

export class JobStore {
  constructor(readonly db: Database) {}

  async insert(job: NewJob): Promise<JobRecord> {
    const now = new Date();
    await this.db.exec(
      "job-insert",
      // NewJob is the row less what the store sets: its fields are columns (a caller's literal is excess-checked).
      this.db.q.insertInto("ScheduledJob").values({
        ...job,
        principal: job.principal ?? null,
        createdAt: now,
        updatedAt: now,
      }),
    );
    return (await this.get(job.id))!;
  }

  async get(id: string): Promise<JobRecord | null> {
    const [r] = await this.db.query("job-get", this.db.q.selectFrom("ScheduledJob").selectAll().where("id", "=", id));
    return r ? jobOf(r) : null;
  }

  /**
   * Jobs, oldest first; `conversation` narrows to one chat, `principal` to
   * the jobs one API token made, `open` to active and paused ones.
   */
  async list(opts: { conversation?: string; principal?: string; open?: boolean; limit?: number } = {}): Promise<JobRecord[]> {
    let q = this.db.q.selectFrom("ScheduledJob").selectAll();
    if (opts.conversation) q = q.where("conversation", "=", opts.conversation);
    if (opts.principal !== undefined) q = q.where("principal", "=", opts.principal);
    if (opts.open) q = q.where("status", "in", ["active", "paused"]);
    const rows = await this.db.query(
      "job-list",
      q
        .orderBy("createdAt", "asc")
        .orderBy("id", "asc")
        .limit(opts.limit ?? 500),
    );
    return rows.map(jobOf);
  }

  /** Cancels an open job (only if `principal` made it, when given); false if it was not open. */
  async cancel(id: string, principal?: string): Promise<boolean> {
    let q = this.db.q
      .updateTable("ScheduledJob")
      .set({ status: "cancelled", nextRunAt: null, updatedAt: new Date() })
      .where("id", "=", id)
      .where("status", "in", ["active", "paused"]);
    if (principal !== undefined) q = q.where("principal", "=", principal);
    return (await this.db.exec("job-cancel", q)) === 1;
  }

  async setSession(id: string, sessionId: string): Promise<void> {
    await this.db.exec("job-session", this.db.q.updateTable("ScheduledJob").set({ sessionId }).where("id", "=", id));
  }

  /**
   * Claims up to `limit` due jobs for `owner`: active, due by `now`, and
   * unclaimed or claimed before `staleBefore`. One conditional UPDATE per
   * job: under concurrency exactly one process's UPDATE changes the row
   * (PostgreSQL re-checks the WHERE on the row it waited for), so a due time
   * is claimed once. Each claim counts an attempt at the current due time.
   */
  async claimDue(owner: string, now: Date, staleBefore: Date, limit: number): Promise<JobRecord[]> {
    const due = await this.db.query(
      "job-due",
      this.db.q
        .selectFrom("ScheduledJob")
        .select("id")
        .where("status", "=", "active")
        .where("nextRunAt", "<=", now)
        .where((eb) => eb.or([eb("claimOwner", "is", null), eb("claimedAt", "<", staleBefore)]))
        .orderBy("nextRunAt", "asc")
        .limit(limit),
    );
    const claimed: JobRecord[] = [];
    for (const { id } of due) {
      const rows = await this.db.writeReturning(
        "job-claim",
        this.db.q
          .updateTable("ScheduledJob")
          .set((eb) => ({ claimOwner: owner, claimedAt: now, claimAttempts: eb("claimAttempts", "+", 1) }))
          .where("id", "=", id)
          .where("status", "=", "active")
          .where("nextRunAt", "<=", now)
          .where((eb) => eb.or([eb("claimOwner", "is", null), eb("claimedAt", "<", staleBefore)]))
          .returningAll(),
      );
      if (rows[0]) claimed.push(jobOf(rows[0]));
    }
    return claimed;
  }

  /** Keeps this process's claims fresh while their runs take long (an agent turn). */
  async renewClaims(ids: string[], owner: string): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      const part = ids.slice(i, i + 500);
      await this.db.exec(
        "job-renew",
        this.db.q.updateTable("ScheduledJob").set({ claimedAt: new Date() }).where("id", "in", part).where("claimOwner", "=", owner),
      );
    }
  }

  /** The run row of a claimed due time: created, or the one an earlier attempt (a crash) left. */
  async startRun(id: string, jobId: string, dueAt: Date, owner: string): Promise<RunRecord> {
    await this.db.exec(
      "run-start",
      this.db.q
        .insertInto("JobRun")
        .values({ id, jobId, dueAt, status: "running", deliveryId: null, error: null, owner, startedAt: new Date(), finishedAt: null })
        .onConflict((oc) => oc.columns(["jobId", "dueAt"]).doNothing()),
    );
    const [r] = await this.db.query("run-get", this.db.q.selectFrom("JobRun").selectAll().where("jobId", "=", jobId).where("dueAt", "=", dueAt));
    return runOf(r!);
  }

  /**
   * Everything a run changes, in one transaction, and only while this
   * process still holds the job's claim on that due time: the delivery row,
   * the transcript entries, the run's state, and the job moved to its next
   * due time with the claim released. False: the claim was lost (another
   * process took the due time over), and nothing was written.
   */
  async complete(c: RunCompletion, owner: string): Promise<boolean> {
    const b = this.db.q;
    return this.db.sqlTransaction("run-complete", async (q) => {
      const now = new Date();
      const moved = await q.run(
        b
          .updateTable("ScheduledJob")
          .set((eb) => ({
            nextRunAt: c.next,
            // No next due time: an active job is done (a paused or cancelled one keeps its status).
            ...(c.next === null ? { status: eb.case().when("status", "=", "active").then("done").else(eb.ref("status")).end() } : {}),
            claimOwner: null,
            claimedAt: null,
            claimAttempts: 0,
            lastRunAt: c.run.dueAt,
            updatedAt: now,
          }))
          .where("id", "=", c.job.id)
          .where("claimOwner", "=", owner)
          .where("nextRunAt", "=", c.run.dueAt),
      );
      if (moved !== 1) return false;
      if (c.delivery) {
        await q.run(
          b.insertInto("OutboundDelivery").values({
            id: c.delivery.id,
            inboundId: null,
            sessionId: c.delivery.sessionId,
            platform: c.job.platform,
            botId: c.job.botId,
            address: c.job.address,
            part: 0,
            text: c.delivery.text,
            status: "pending",
            attempts: 0,
            createdAt: now,
            expiresAt: c.delivery.expiresAt,
          }),
        );
      }
      for (const m of c.messages) await appendMessage(b, q, m, now);
      await q.run(
        b
          .updateTable("JobRun")
          .set({ status: c.status, deliveryId: c.delivery?.id ?? null, error: c.error?.slice(0, 500) ?? null, finishedAt: c.status === "sending" ? null : now })
          .where("id", "=", c.run.id),
      );
      if (c.status !== "sending") await settleJob(b, q, c.job.id, c.status, c.error ?? null, now);
      return true;
    });
  }

  /** Runs whose delivery is still in the ledger's hands, with that delivery's state. */
  async sending(
    limit = 500,
  ): Promise<
    Array<RunRecord & { deliveryStatus: string | null; deliveryError: string | null; platformMessageId: string | null; deliveryExpiresAt: Date | null }>
  > {
    const rows = await this.db.query(
      "runs-sending",
      this.db.q
        .selectFrom("JobRun as r")
        .leftJoin("OutboundDelivery as d", "d.id", "r.deliveryId")
        .selectAll("r")
        .select(["d.status as deliveryStatus", "d.lastError as deliveryError", "d.platformMessageId as platformMessageId", "d.expiresAt as deliveryExpiresAt"])
        .where("r.status", "=", "sending")
        .orderBy("r.dueAt", "asc")
        .limit(limit),
    );
    return rows.map(runOf);
  }

  /**
   * A run's final state, once: `delivered` (the platform returned a message
   * id) or `failed` with the reason. The job's failures in a row are counted;
   * the third pauses it. `paused` is true only for the call that paused it,
   * so operators are told once.
   */
  async settle(
    runId: string,
    status: "delivered" | "failed",
    error: string | null,
  ): Promise<{ settled: boolean; failures: number; paused: boolean; jobId: string }> {
    const b = this.db.q;
    return this.db.sqlTransaction("run-settle", async (q) => {
      const now = new Date();
      const [run] = await q.all(b.selectFrom("JobRun").select("jobId").where("id", "=", runId).where("status", "=", "sending"));
      if (!run) return { settled: false, failures: 0, paused: false, jobId: "" };
      await q.run(
        b
          .updateTable("JobRun")
          .set({ status, error: error?.slice(0, 500) ?? null, finishedAt: now })
          .where("id", "=", runId)
          .where("status", "=", "sending"),
      );
      return { settled: true, jobId: run.jobId, ...(await settleJob(b, q, run.jobId, status, error, now)) };
    });
  }

  /** Deletes up to `limit` finished runs due before `before` (RECORD_RETENTION); runs still sending are kept. */
  async pruneRuns(before: Date, limit: number): Promise<number> {
    return this.db.exec(
      "prune-job-runs",
      this.db.q
        .deleteFrom("JobRun")
        .where("id", "in", (eb) =>
          eb.selectFrom("JobRun").select("id").where("status", "in", ["delivered", "failed", "missed"]).where("dueAt", "<", before).limit(limit),
        ),
    );
  }

  async runs(jobId: string, limit = 20): Promise<RunRecord[]> {
    const rows = await this.db.query(
      "runs-of-job",
      this.db.q.selectFrom("JobRun").selectAll().where("jobId", "=", jobId).orderBy("dueAt", "desc").limit(limit),
    );
    return rows.map(runOf);
  }

  /**
   * The reply address a session's chat last used: its latest delivery, else
   * its latest inbound event's, else its parent's (the session before /new).
   */
  async addressOfSession(sessionId: string, parentId?: string, channel?: string): Promise<StoredAddress | undefined> {
    const q = this.db.q;
    for (let id: string | undefined = sessionId, hops = 0; id && hops < 5; hops++) {
      const [d] = await this.db.query(
        "job-address-delivery",
        q.selectFrom("OutboundDelivery").select("address").where("sessionId", "=", id).orderBy("createdAt", "desc").limit(1),
      );
      if (d) return JSON.parse(d.address);
      const [e] = await this.db.query(
        "job-address-inbound",
        q.selectFrom("InboundEvent").select("envelope").where("sessionId", "=", id).orderBy("seq", "desc").limit(1),
      );
      if (e) {
        const env = JSON.parse(e.envelope) as { replyTo: StoredAddress; chatKind: string };
        return { ...env.replyTo, kind: env.chatKind === "private" ? "private" : "group" };
      }
      const [s]: Array<{ parentId: string | null }> = await this.db.query(
        "job-address-parent",
        q.selectFrom("Session").select("parentId").where("id", "=", id),
      );
      id = hops === 0 && parentId ? parentId : (s?.parentId ?? undefined);
    }
    // A fresh session's first turn: the event being answered is recorded, not yet linked to the session.
    if (channel) {
      const [e] = await this.db.query(
        "job-address-channel",
        q
          .selectFrom("InboundEvent")
          .select("envelope")
          .where("status", "=", "received")
          .where("envelope", "like", `%${JSON.stringify({ channel }).slice(1, -1)}%`)
          .orderBy("seq", "desc")
          .limit(1),
      );
      if (e) {
        const env = JSON.parse(e.envelope) as { replyTo: StoredAddress; chatKind: string; channel: string };
        if (env.channel === channel) return { ...env.replyTo, kind: env.chatKind === "private" ? "private" : "group" };
      }
    }
    return undefined;
  }

  /** The latest recorded event of a platform chat (and thread), to find its conversation and reply address. */
  async latestEnvelope(platform: string, chat: string, thread?: string): Promise<LatestEnvelope | undefined> {
    const like = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
    const pattern = `${like(platform)}:%${like(chat)}:%`;
    const rows = await this.db.query(
      "job-latest-envelope",
      this.db.q
        .selectFrom("InboundEvent")
        .select(["envelope", "conversation"])
        .where("platform", "=", platform)
        // Backslash escapes LIKE's wildcards in the ids (the same ESCAPE clause on both providers).
        .where(sql<boolean>`${sql.ref("conversation")} LIKE ${pattern} ESCAPE '\\'`)
        .orderBy("seq", "desc")
        .limit(50),
    );
    for (const r of rows) {
      const env = JSON.parse(r.envelope) as LatestEnvelope;
      // The platform's external chat id, or the id its API takes (Slack: "<team>/<channel>" or the channel alone).
      if ((env.chatId !== chat && env.replyTo.chatId !== chat) || (thread ? env.threadId !== thread : env.chatKind === "thread")) continue;
      return { ...env, ownThread: !!thread && r.conversation.endsWith(`:${thread}`) };
    }
    return undefined;
  }

  /** Run counts by status (for tests and `schedule list`). */
  async runCounts(): Promise<Record<string, number>> {
    const rows = await this.db.query(
      "run-counts",
      this.db.q
        .selectFrom("JobRun")
        .select(["status", (eb) => eb.fn.countAll<number>().as("n")])
        .groupBy("status"),
    );
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }
}

/** A reply address as delivery rows and envelopes store it (the runtime's ReplyAddress). */
export interface StoredAddress {
  platform: string;
  botId: string;
  chatId: string;
  threadId?: string;
  replyToMessageId?: string;
  extra?: Record<string, string>;
  kind?: "private" | "group";
}

export interface LatestEnvelope {
  platform: string;
  botId: string;
  chatId: string;
  threadId?: string;
  chatKind: "private" | "group" | "thread";
  senderId: string;
  channel: string;
  replyTo: StoredAddress;
  /** The thread has a session of its own (THREAD_SESSIONS=own when it was recorded). */
  ownThread: boolean;
}

/** The job's last run and its failures in a row; the third failure in a row pauses an active job. */
async function settleJob(
  b: QueryBuilder,
  q: Sql,
  jobId: string,
  status: string,
  error: string | null,
  now: Date,
): Promise<{ failures: number; paused: boolean }> {
  if (status === "missed") {
    await q.run(b.updateTable("ScheduledJob").set({ lastStatus: status, lastError: error, updatedAt: now }).where("id", "=", jobId));
    return { failures: 0, paused: false };
  }
  const failed = status === "failed";
  await q.run(
    b
      .updateTable("ScheduledJob")
      .set((eb) => ({ lastStatus: status, lastError: error, failures: failed ? eb("failures", "+", 1) : 0, updatedAt: now }))
      .where("id", "=", jobId),
  );
  if (!failed) return { failures: 0, paused: false };
  const paused = await q.run(
    b
      .updateTable("ScheduledJob")
      .set({ status: "paused", updatedAt: now })
      .where("id", "=", jobId)
      .where("status", "=", "active")
      .where("failures", ">=", PAUSE_AFTER_FAILURES),
  );
  const [row] = await q.all(b.selectFrom("ScheduledJob").select("failures").where("id", "=", jobId));
  return { failures: Number(row?.failures ?? 0), paused: paused === 1 };
}

export const PAUSE_AFTER_FAILURES = 3;

/** One transcript entry at the session's next seq; an archived session (a /new raced the run) gets none. */
async function appendMessage(b: QueryBuilder, q: Sql, m: { sessionId: string; role: string; content: string; meta?: string }, now: Date): Promise<void> {
  const touched = await q.run(b.updateTable("Session").set({ lastActive: now }).where("id", "=", m.sessionId).where("archived", "=", false));
  if (touched !== 1) return;
  const [last] = await q.all(
    b
      .selectFrom("Message")
      .select((eb) => eb.fn.max("seq").as("seq"))
      .where("sessionId", "=", m.sessionId),
  );
  await q.run(
    b.insertInto("Message").values({
      sessionId: m.sessionId,
      seq: Number(last?.seq ?? 0) + 1,
      role: m.role,
      content: m.content,
      meta: m.meta ?? null,
      createdAt: now,
    }),
  );
}

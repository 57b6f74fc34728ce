import type { Selectable } from "kysely";
import { codecs, type ConversationTemplate } from "./codecs.js";
import type { Database } from "./db.js";
import { completeRun, settleRun } from "./job-runs.js";
import { type ConversationAddressRecord, ConversationAddressStore } from "./proactive.js";
import type { DB } from "./sql.js";

export { PAUSE_AFTER_FAILURES } from "./job-runs.js";

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
  readonly #addresses: ConversationAddressStore;

  constructor(readonly db: Database) {
    this.#addresses = new ConversationAddressStore(db);
  }

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

  /** Everything a run changes, in one transaction, while the claim is still `owner`'s (job-runs.ts); false: the claim was lost. */
  complete(c: RunCompletion, owner: string): Promise<boolean> {
    return completeRun(this.db, c, owner);
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

  /** A run's final state, once (job-runs.ts): failures in a row are counted, and `paused` is true only for the call that paused the job. */
  settle(runId: string, status: "delivered" | "failed", error: string | null): Promise<{ settled: boolean; failures: number; paused: boolean; jobId: string }> {
    return settleRun(this.db, runId, status, error);
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
   * The conversation a binding last spoke in, as the gateway recorded it
   * (ConversationAddress, the one place a conversation's address is kept):
   * a thread sharing its channel's session has several, the latest wins.
   */
  async conversationOfBinding(bindingKey: string): Promise<RecordedConversation | undefined> {
    const r = await this.#addresses.byBinding(bindingKey);
    return r && recorded(r);
  }

  /**
   * The conversations of a platform chat (and thread), by its external id or the one its API takes (Slack's
   * channel id), latest first: one per bot that talked there (of `botId` only, given one).
   */
  async conversationsIn(platform: string, chat: string, thread?: string, botId?: string): Promise<RecordedConversation[]> {
    return (await this.#addresses.byChat(platform, chat, thread ?? "", botId)).map(recorded);
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

/** A conversation as ConversationAddress holds it, its template decoded. */
export type RecordedConversation = Omit<ConversationAddressRecord, "template"> & { template: ConversationTemplate };

const recorded = (r: ConversationAddressRecord): RecordedConversation => ({ ...r, template: codecs.conversationTemplate.decode(r.template, r.key) });

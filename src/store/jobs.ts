import type { Database } from "./db.js";
import type { Sql, SqlValue } from "./sql.js";
import { toDate, toDateOrNull } from "./sql.js";

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

export interface JobRecord {
  id: string;
  conversation: string;
  target: string;
  address: string;
  platform: string;
  botId: string;
  kind: string;
  spec: string;
  timezone: string;
  action: string;
  text: string;
  status: JobStatus;
  nextRunAt: Date | null;
  failures: number;
  lastRunAt: Date | null;
  lastStatus: string | null;
  lastError: string | null;
  claimOwner: string | null;
  claimedAt: Date | null;
  claimAttempts: number;
  sessionId: string | null;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface RunRecord {
  id: string;
  jobId: string;
  dueAt: Date;
  status: RunStatus;
  deliveryId: string | null;
  error: string | null;
  owner: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

export type NewJob = Omit<
  JobRecord,
  "failures" | "lastRunAt" | "lastStatus" | "lastError" | "claimOwner" | "claimedAt" | "claimAttempts" | "createdAt" | "updatedAt" | "sessionId"
>;

const JOB_COLUMNS = `"id","conversation","target","address","platform","botId","kind","spec","timezone","action","text","status","nextRunAt","failures","lastRunAt","lastStatus","lastError","claimOwner","claimedAt","claimAttempts","sessionId","createdBy","createdAt","updatedAt"`;
const RUN_COLUMNS = `"id","jobId","dueAt","status","deliveryId","error","owner","startedAt","finishedAt"`;

function jobOf(r: Record<string, unknown>): JobRecord {
  return {
    ...(r as unknown as JobRecord),
    failures: Number(r.failures),
    claimAttempts: Number(r.claimAttempts),
    nextRunAt: toDateOrNull(r.nextRunAt),
    lastRunAt: toDateOrNull(r.lastRunAt),
    claimedAt: toDateOrNull(r.claimedAt),
    createdAt: toDate(r.createdAt),
    updatedAt: toDate(r.updatedAt),
  };
}

function runOf(r: Record<string, unknown>): RunRecord {
  return { ...(r as unknown as RunRecord), dueAt: toDate(r.dueAt), startedAt: toDate(r.startedAt), finishedAt: toDateOrNull(r.finishedAt) };
}

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
      `INSERT INTO "ScheduledJob" ("id","conversation","target","address","platform","botId","kind","spec","timezone","action","text","status","nextRunAt","createdBy","createdAt","updatedAt") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
      [
        job.id,
        job.conversation,
        job.target,
        job.address,
        job.platform,
        job.botId,
        job.kind,
        job.spec,
        job.timezone,
        job.action,
        job.text,
        job.status,
        job.nextRunAt,
        job.createdBy,
        now,
        now,
      ],
    );
    return (await this.get(job.id))!;
  }

  async get(id: string): Promise<JobRecord | null> {
    const [r] = await this.db.query<Record<string, unknown>>("job-get", `SELECT ${JOB_COLUMNS} FROM "ScheduledJob" WHERE "id" = ?`, [id]);
    return r ? jobOf(r) : null;
  }

  /** Jobs, oldest first; `conversation` narrows to one chat, `open` to active and paused ones. */
  async list(opts: { conversation?: string; open?: boolean; limit?: number } = {}): Promise<JobRecord[]> {
    const where: string[] = [];
    const params: SqlValue[] = [];
    if (opts.conversation) {
      where.push(`"conversation" = ?`);
      params.push(opts.conversation);
    }
    if (opts.open) where.push(`"status" IN ('active','paused')`);
    params.push(opts.limit ?? 500);
    const rows = await this.db.query<Record<string, unknown>>(
      "job-list",
      `SELECT ${JOB_COLUMNS} FROM "ScheduledJob"${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY "createdAt" ASC, "id" ASC LIMIT ?`,
      params,
    );
    return rows.map(jobOf);
  }

  /** Cancels an open job; false if it was not open. */
  async cancel(id: string): Promise<boolean> {
    const n = await this.db.exec(
      "job-cancel",
      `UPDATE "ScheduledJob" SET "status" = ?, "nextRunAt" = NULL, "updatedAt" = ? WHERE "id" = ? AND "status" IN ('active','paused')`,
      ["cancelled", new Date(), id],
    );
    return n === 1;
  }

  async setSession(id: string, sessionId: string): Promise<void> {
    await this.db.exec("job-session", `UPDATE "ScheduledJob" SET "sessionId" = ? WHERE "id" = ?`, [sessionId, id]);
  }

  /**
   * Claims up to `limit` due jobs for `owner`: active, due by `now`, and
   * unclaimed or claimed before `staleBefore`. One conditional UPDATE per
   * job: under concurrency exactly one process's UPDATE changes the row
   * (PostgreSQL re-checks the WHERE on the row it waited for), so a due time
   * is claimed once. Each claim counts an attempt at the current due time.
   */
  async claimDue(owner: string, now: Date, staleBefore: Date, limit: number): Promise<JobRecord[]> {
    const due = await this.db.query<{ id: string }>(
      "job-due",
      `SELECT "id" FROM "ScheduledJob" WHERE "status" = ? AND "nextRunAt" <= ? AND ("claimOwner" IS NULL OR "claimedAt" < ?) ORDER BY "nextRunAt" ASC LIMIT ?`,
      ["active", now, staleBefore, limit],
    );
    const claimed: JobRecord[] = [];
    for (const { id } of due) {
      const rows = await this.db.writeReturning<Record<string, unknown>>(
        "job-claim",
        `UPDATE "ScheduledJob" SET "claimOwner" = ?, "claimedAt" = ?, "claimAttempts" = "claimAttempts" + 1 WHERE "id" = ? AND "status" = ? AND "nextRunAt" <= ? AND ("claimOwner" IS NULL OR "claimedAt" < ?) RETURNING ${JOB_COLUMNS}`,
        [owner, now, id, "active", now, staleBefore],
      );
      if (rows[0]) claimed.push(jobOf(rows[0]));
    }
    return claimed;
  }

  /** Keeps this process's claims fresh while their runs take long (an agent turn). */
  async renewClaims(ids: string[], owner: string): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      const part = ids.slice(i, i + 500);
      await this.db.exec("job-renew", `UPDATE "ScheduledJob" SET "claimedAt" = ? WHERE "id" IN (${part.map(() => "?").join(",")}) AND "claimOwner" = ?`, [
        new Date(),
        ...part,
        owner,
      ]);
    }
  }

  /** The run row of a claimed due time: created, or the one an earlier attempt (a crash) left. */
  async startRun(id: string, jobId: string, dueAt: Date, owner: string): Promise<RunRecord> {
    await this.db.exec("run-start", `INSERT INTO "JobRun" (${RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT ("jobId","dueAt") DO NOTHING`, [
      id,
      jobId,
      dueAt,
      "running",
      null,
      null,
      owner,
      new Date(),
      null,
    ]);
    const [r] = await this.db.query<Record<string, unknown>>("run-get", `SELECT ${RUN_COLUMNS} FROM "JobRun" WHERE "jobId" = ? AND "dueAt" = ?`, [
      jobId,
      dueAt,
    ]);
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
    return this.db.sqlTransaction("run-complete", async (q) => {
      const now = new Date();
      const moved = await q.run(
        `UPDATE "ScheduledJob" SET "nextRunAt" = ?, "status" = CASE WHEN ? = 1 AND "status" = 'active' THEN 'done' ELSE "status" END, "claimOwner" = NULL, "claimedAt" = NULL, "claimAttempts" = 0, "lastRunAt" = ?, "updatedAt" = ? WHERE "id" = ? AND "claimOwner" = ? AND "nextRunAt" = ?`,
        [c.next, c.next === null ? 1 : 0, c.run.dueAt, now, c.job.id, owner, c.run.dueAt],
      );
      if (moved !== 1) return false;
      if (c.delivery) {
        await q.run(
          `INSERT INTO "OutboundDelivery" ("id","inboundId","sessionId","platform","botId","address","part","text","status","attempts","createdAt","expiresAt") VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
          [c.delivery.id, null, c.delivery.sessionId, c.job.platform, c.job.botId, c.job.address, 0, c.delivery.text, "pending", 0, now, c.delivery.expiresAt],
        );
      }
      for (const m of c.messages) await appendMessage(q, m, now);
      await q.run(`UPDATE "JobRun" SET "status" = ?, "deliveryId" = ?, "error" = ?, "finishedAt" = ? WHERE "id" = ?`, [
        c.status,
        c.delivery?.id ?? null,
        c.error?.slice(0, 500) ?? null,
        c.status === "sending" ? null : now,
        c.run.id,
      ]);
      if (c.status !== "sending") await settleJob(q, c.job.id, c.status, c.error ?? null, now);
      return true;
    });
  }

  /** Runs whose delivery is still in the ledger's hands, with that delivery's state. */
  async sending(
    limit = 500,
  ): Promise<
    Array<RunRecord & { deliveryStatus: string | null; deliveryError: string | null; platformMessageId: string | null; deliveryExpiresAt: Date | null }>
  > {
    const rows = await this.db.query<Record<string, unknown>>(
      "runs-sending",
      `SELECT r."id",r."jobId",r."dueAt",r."status",r."deliveryId",r."error",r."owner",r."startedAt",r."finishedAt", d."status" AS "deliveryStatus", d."lastError" AS "deliveryError", d."platformMessageId" AS "platformMessageId", d."expiresAt" AS "deliveryExpiresAt" FROM "JobRun" r LEFT JOIN "OutboundDelivery" d ON d."id" = r."deliveryId" WHERE r."status" = ? ORDER BY r."dueAt" ASC LIMIT ?`,
      ["sending", limit],
    );
    return rows.map((r) => ({
      ...runOf(r),
      deliveryStatus: (r.deliveryStatus as string | null) ?? null,
      deliveryError: (r.deliveryError as string | null) ?? null,
      platformMessageId: (r.platformMessageId as string | null) ?? null,
      deliveryExpiresAt: toDateOrNull(r.deliveryExpiresAt),
    }));
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
    return this.db.sqlTransaction("run-settle", async (q) => {
      const now = new Date();
      const [run] = await q.all<{ jobId: string }>(`SELECT "jobId" FROM "JobRun" WHERE "id" = ? AND "status" = ?`, [runId, "sending"]);
      if (!run) return { settled: false, failures: 0, paused: false, jobId: "" };
      await q.run(`UPDATE "JobRun" SET "status" = ?, "error" = ?, "finishedAt" = ? WHERE "id" = ? AND "status" = ?`, [
        status,
        error?.slice(0, 500) ?? null,
        now,
        runId,
        "sending",
      ]);
      return { settled: true, jobId: run.jobId, ...(await settleJob(q, run.jobId, status, error, now)) };
    });
  }

  /** Deletes up to `limit` finished runs due before `before` (RECORD_RETENTION); runs still sending are kept. */
  async pruneRuns(before: Date, limit: number): Promise<number> {
    return this.db.exec(
      "prune-job-runs",
      `DELETE FROM "JobRun" WHERE "id" IN (SELECT "id" FROM "JobRun" WHERE "status" IN ('delivered','failed','missed') AND "dueAt" < ? LIMIT ?)`,
      [before, limit],
    );
  }

  async runs(jobId: string, limit = 20): Promise<RunRecord[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      "runs-of-job",
      `SELECT ${RUN_COLUMNS} FROM "JobRun" WHERE "jobId" = ? ORDER BY "dueAt" DESC LIMIT ?`,
      [jobId, limit],
    );
    return rows.map(runOf);
  }

  /**
   * The reply address a session's chat last used: its latest delivery, else
   * its latest inbound event's, else its parent's (the session before /new).
   */
  async addressOfSession(sessionId: string, parentId?: string, channel?: string): Promise<StoredAddress | undefined> {
    for (let id: string | undefined = sessionId, hops = 0; id && hops < 5; hops++) {
      const [d] = await this.db.query<{ address: string }>(
        "job-address-delivery",
        `SELECT "address" FROM "OutboundDelivery" WHERE "sessionId" = ? ORDER BY "createdAt" DESC LIMIT 1`,
        [id],
      );
      if (d) return JSON.parse(d.address);
      const [e] = await this.db.query<{ envelope: string }>(
        "job-address-inbound",
        `SELECT "envelope" FROM "InboundEvent" WHERE "sessionId" = ? ORDER BY "seq" DESC LIMIT 1`,
        [id],
      );
      if (e) {
        const env = JSON.parse(e.envelope) as { replyTo: StoredAddress; chatKind: string };
        return { ...env.replyTo, kind: env.chatKind === "private" ? "private" : "group" };
      }
      const [s]: Array<{ parentId: string | null }> = await this.db.query<{ parentId: string | null }>(
        "job-address-parent",
        `SELECT "parentId" FROM "Session" WHERE "id" = ?`,
        [id],
      );
      id = hops === 0 && parentId ? parentId : (s?.parentId ?? undefined);
    }
    // A fresh session's first turn: the event being answered is recorded, not yet linked to the session.
    if (channel) {
      const [e] = await this.db.query<{ envelope: string }>(
        "job-address-channel",
        `SELECT "envelope" FROM "InboundEvent" WHERE "status" = ? AND "envelope" LIKE ? ORDER BY "seq" DESC LIMIT 1`,
        ["received", `%${JSON.stringify({ channel }).slice(1, -1)}%`],
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
    const rows = await this.db.query<{ envelope: string; conversation: string }>(
      "job-latest-envelope",
      `SELECT "envelope","conversation" FROM "InboundEvent" WHERE "platform" = ? AND "conversation" LIKE ? ESCAPE '\\' ORDER BY "seq" DESC LIMIT 50`,
      [platform, `${like(platform)}:%${like(chat)}:%`],
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
    const rows = await this.db.query<{ status: string; n: number | string }>("run-counts", `SELECT "status", COUNT(*) AS "n" FROM "JobRun" GROUP BY "status"`);
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
async function settleJob(q: Sql, jobId: string, status: string, error: string | null, now: Date): Promise<{ failures: number; paused: boolean }> {
  if (status === "missed") {
    await q.run(`UPDATE "ScheduledJob" SET "lastStatus" = ?, "lastError" = ?, "updatedAt" = ? WHERE "id" = ?`, [status, error, now, jobId]);
    return { failures: 0, paused: false };
  }
  const failed = status === "failed";
  await q.run(`UPDATE "ScheduledJob" SET "lastStatus" = ?, "lastError" = ?, "failures" = ${failed ? `"failures" + 1` : "0"}, "updatedAt" = ? WHERE "id" = ?`, [
    status,
    error,
    now,
    jobId,
  ]);
  if (!failed) return { failures: 0, paused: false };
  const paused = await q.run(`UPDATE "ScheduledJob" SET "status" = ?, "updatedAt" = ? WHERE "id" = ? AND "status" = ? AND "failures" >= ?`, [
    "paused",
    now,
    jobId,
    "active",
    PAUSE_AFTER_FAILURES,
  ]);
  const [row] = await q.all<{ failures: number }>(`SELECT "failures" FROM "ScheduledJob" WHERE "id" = ?`, [jobId]);
  return { failures: Number(row?.failures ?? 0), paused: paused === 1 };
}

export const PAUSE_AFTER_FAILURES = 3;

/** One transcript entry at the session's next seq; an archived session (a /new raced the run) gets none. */
async function appendMessage(q: Sql, m: { sessionId: string; role: string; content: string; meta?: string }, now: Date): Promise<void> {
  const touched = await q.run(`UPDATE "Session" SET "lastActive" = ? WHERE "id" = ? AND "archived" = ?`, [now, m.sessionId, false]);
  if (touched !== 1) return;
  const [last] = await q.all<{ seq: number | null }>(`SELECT MAX("seq") AS "seq" FROM "Message" WHERE "sessionId" = ?`, [m.sessionId]);
  await q.run(`INSERT INTO "Message" ("sessionId","seq","role","content","meta","createdAt") VALUES (?,?,?,?,?,?)`, [
    m.sessionId,
    Number(last?.seq ?? 0) + 1,
    m.role,
    m.content,
    m.meta ?? null,
    now,
  ]);
}

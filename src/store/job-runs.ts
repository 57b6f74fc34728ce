import { codecs } from "./codecs.js";
import type { Database } from "./db.js";
import { insertDeliveries, pendingDeliveries } from "./deliveries.js";
import type { RunCompletion } from "./jobs.js";
import type { QueryBuilder, Sql } from "./sql.js";

/**
 * What a job's run writes, each in one transaction (see JobStore): a run's
 * completion, only while the claim is still the caller's, and its settling
 * once its delivery is decided, which counts failures in a row and pauses
 * the job at the third.
 */

/**
 * Everything a run changes, in one transaction, and only while this
 * process still holds the job's claim on that due time: the delivery row,
 * the transcript entries, the run's state, and the job moved to its next
 * due time with the claim released. False: the claim was lost (another
 * process took the due time over), and nothing was written.
 */
export function completeRun(db: Database, c: RunCompletion, owner: string): Promise<boolean> {
  const b = db.q;
  return db.sqlTransaction("run-complete", async (q) => {
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
      const [row] = pendingDeliveries({ sessionId: c.delivery.sessionId, inboundId: null, createdAt: now, expiresAt: c.delivery.expiresAt }, [
        { address: codecs.jobAddress.decode(c.job.address, c.job.id), text: c.delivery.text },
      ]);
      await insertDeliveries(db, q, [{ ...row!, id: c.delivery.id }]);
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

/**
 * A run's final state, once: `delivered` (the platform returned a message
 * id) or `failed` with the reason. The job's failures in a row are counted;
 * the third pauses it. `paused` is true only for the call that paused it,
 * so operators are told once.
 */
export function settleRun(
  db: Database,
  runId: string,
  status: "delivered" | "failed",
  error: string | null,
): Promise<{ settled: boolean; failures: number; paused: boolean; jobId: string }> {
  const b = db.q;
  return db.sqlTransaction("run-settle", async (q) => {
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

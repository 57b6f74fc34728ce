import { CompiledQuery } from "kysely";
import type { Query } from "../sql.js";

/** What one turn's commit writes, as the single PostgreSQL statement takes it (turns.ts builds it from a TurnCommit). */
export interface TurnStatementInput {
  sessionId: string;
  now: Date;
  inboundIds: string[];
  /** The replies' rows; their expiry is the statement's to compute (from the inbound events it marks). */
  deliveries: Array<{ id: string; inboundId: string | null; platform: string; botId: string; address: string; part: number; text: string }>;
  ttlMs: number;
  /** Undefined: the transcript is not touched ("skipped"). */
  transcript?: { increment: number; messages: Array<{ role: string; content: string; meta: string | null; createdAt: Date; sourceId: string | null }> };
}

/** The statement's one row: whether the inbound events were still to handle, the replies' expiry as stored, and the transcript's fate. */
export interface TurnStatementRow {
  marked: boolean;
  expiresAt: Date | null;
  touched: boolean;
  sessionExists: boolean;
}

/**
 * A turn's commit on PostgreSQL as ONE statement (data-modifying CTEs), where
 * the generic path (turns.ts) sends four, each a round trip. On this path a
 * round trip costs more than the statement's work: each is a socket write and
 * a wake of the server's backend (measured, issue 31: the writes were a third
 * of the core's CPU). Same writes, same order of effects, same refusals:
 * - `marked` marks the inbound events done; when none was still "received"
 *   (a retried commit that landed, another process's), `gate` is empty and
 *   nothing else is written ("duplicate").
 * - The replies expire `ttlMs` after the earliest marked event (after now
 *   without events); their expiry is returned as stored.
 * - The session is touched only when not archived; the messages take seqs after
 *   its last, read in the statement's snapshot (before the insert), as before.
 * All CTEs see one snapshot and run to completion whether read or not.
 * Values are bound parameters, cast where PostgreSQL cannot infer a type
 * (an INSERT ... SELECT does not take its columns' types). Built once per
 * shape (counts of events, replies and messages) and cached.
 */
export function turnStatement(t: TurnStatementInput): Query<TurnStatementRow> {
  const key = `${t.inboundIds.length}:${t.deliveries.length}:${t.transcript ? t.transcript.messages.length : -1}`;
  let text = texts.get(key);
  if (text === undefined) {
    text = buildText(t.inboundIds.length, t.deliveries.length, t.transcript?.messages.length);
    // Shapes are a handful (one event, one reply, two messages); an unusual one is built per call rather than kept.
    if (texts.size < 64) texts.set(key, text);
  }
  // In the order buildText numbers them: a parameter the shape does not use is not sent (it would have no type).
  const params: unknown[] = [t.sessionId, t.now, ...t.inboundIds];
  if (t.deliveries.length) params.push(t.ttlMs);
  for (const d of t.deliveries) params.push(d.id, d.inboundId, d.platform, d.botId, d.address, d.part, d.text);
  if (t.transcript) params.push(t.transcript.increment);
  for (const m of t.transcript?.messages ?? []) params.push(m.role, m.content, m.meta, m.createdAt, m.sourceId);
  const compiled = CompiledQuery.raw(text, params) as CompiledQuery<TurnStatementRow>;
  return { compile: () => compiled };
}

const texts = new Map<string, string>();

/** $1 session id, $2 now, then the event ids; the ttl (ms) and the replies' columns; the turn increment and the messages' columns. */
function buildText(events: number, replies: number, messages: number | undefined): string {
  let n = 2;
  const next = (cast: string) => `$${++n}::${cast}`;
  const ctes: string[] = [];
  if (events > 0) {
    const ids = Array.from({ length: events }, () => next("text")).join(", ");
    ctes.push(
      `"marked" AS (UPDATE "InboundEvent" SET "status" = 'done', "processedAt" = $2::timestamp(3), "sessionId" = $1::text ` +
        `WHERE "id" IN (${ids}) AND "status" = 'received' RETURNING "occurredAt")`,
      `"gate" AS (SELECT min("occurredAt") AS "origin" FROM "marked" HAVING count(*) > 0)`,
    );
  } else {
    ctes.push(`"gate" AS (SELECT $2::timestamp(3) AS "origin")`);
  }
  if (replies > 0) {
    const ttl = next("double precision");
    const rows = Array.from({ length: replies }, () => `(${["text", "text", "text", "text", "text", "integer", "text"].map(next).join(", ")})`).join(", ");
    ctes.push(
      `"dlv" AS (INSERT INTO "OutboundDelivery" ("id", "inboundId", "sessionId", "platform", "botId", "address", "part", "text", "status", "attempts", "createdAt", "expiresAt") ` +
        `SELECT v."id", v."inboundId", $1::text, v."platform", v."botId", v."address", v."part", v."text", 'pending', 0, $2::timestamp(3), ` +
        `"gate"."origin" + ${ttl} * interval '1 millisecond' ` +
        `FROM "gate", (VALUES ${rows}) AS v("id", "inboundId", "platform", "botId", "address", "part", "text") RETURNING "expiresAt")`,
    );
  }
  if (messages !== undefined) {
    const increment = next("integer");
    ctes.push(
      `"touched" AS (UPDATE "Session" SET "lastActive" = $2::timestamp(3), "turnCount" = "turnCount" + ${increment} ` +
        `WHERE "id" = $1::text AND "archived" = false AND EXISTS (SELECT 1 FROM "gate") ` +
        `RETURNING (SELECT max("seq") FROM "Message" WHERE "sessionId" = $1::text) AS "lastSeq")`,
    );
    if (messages > 0) {
      const rows = Array.from({ length: messages }, (_, i) => `(${i + 1}, ${["text", "text", "text", "timestamp(3)", "text"].map(next).join(", ")})`).join(
        ", ",
      );
      ctes.push(
        `"msgs" AS (INSERT INTO "Message" ("sessionId", "seq", "role", "content", "meta", "createdAt", "sourceId") ` +
          `SELECT $1::text, coalesce("touched"."lastSeq", 0) + v."i", v."role", v."content", v."meta", v."createdAt", v."sourceId" ` +
          `FROM "touched", (VALUES ${rows}) AS v("i", "role", "content", "meta", "createdAt", "sourceId"))`,
      );
    }
  }
  const touched = messages === undefined ? "false" : `EXISTS (SELECT 1 FROM "touched")`;
  const expires = replies > 0 ? `(SELECT min("expiresAt") FROM "dlv")` : "NULL::timestamp(3)";
  return (
    `WITH ${ctes.join(", ")} SELECT EXISTS (SELECT 1 FROM "gate") AS "marked", ${expires} AS "expiresAt", ${touched} AS "touched", ` +
    `EXISTS (SELECT 1 FROM "Session" WHERE "id" = $1::text) AS "sessionExists"`
  );
}

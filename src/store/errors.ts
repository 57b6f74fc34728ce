/**
 * Errors raised by the storage layer. The layers above map them to domain
 * errors; the codes are stable.
 */
import { SwitchboardError } from "../errors.js";

export type StoreErrorCode =
  /** A unique key already holds a row. */
  | "Conflict"
  /** A compare-and-set found the row changed (the caller's expectation is stale). */
  | "Stale"
  /** The database stayed locked or busy past the bounded retries. */
  | "Busy"
  /** The transaction's commit was sent but its acknowledgement was lost. */
  | "CommitUnknown"
  /** The database could not be reached, or refused the call for its storage (a full disk, an I/O error). */
  | "Unavailable"
  /** A schema migration failed (now, or in an earlier run and left unresolved): the database needs an operator. */
  | "MigrationFailed"
  /** A stored JSON value is not what its column holds (src/store/codecs.ts). */
  | "Unreadable";

export class StoreError extends SwitchboardError<StoreErrorCode> {
  override readonly name = "StoreError";
}

/** A unique or primary key already holds the row: better-sqlite3's extended result codes, PostgreSQL's unique_violation. */
const CONFLICT = new Set(["SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY", "23505"]);
const RETRYABLE = new Set(["P1008", "P2034", "P1017"]);
const UNAVAILABLE = new Set(["P1001", "P1002", "P1017", "ECONNREFUSED", "ECONNRESET", "57P01", "57P03", "08006", "08001"]);

function codeOf(e: unknown): string | undefined {
  const err = e as { code?: unknown; cause?: { code?: unknown; originalCode?: unknown; kind?: unknown } } | undefined;
  if (typeof err?.code === "string") return err.code;
  if (typeof err?.cause?.originalCode === "string") return err.cause.originalCode;
  if (typeof err?.cause?.code === "string") return err.cause.code;
  return undefined;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function isUniqueViolation(e: unknown): boolean {
  const code = codeOf(e);
  return code !== undefined && CONFLICT.has(code);
}

/** SQLite busy/locked, PostgreSQL serialization failure or deadlock: safe to retry the whole transaction. */
export function isRetryable(e: unknown): boolean {
  const code = codeOf(e);
  if (code && RETRYABLE.has(code)) return true;
  if (code === "40001" || code === "40P01") return true;
  return /SQLITE_BUSY|database is locked|SQLITE_LOCKED|could not serialize|deadlock detected|Operation has timed out|Socket timeout/i.test(messageOf(e));
}

/**
 * The database refused the call for its storage: a full disk, an I/O error,
 * a file it cannot open or write, no memory (SQLite's result codes, extended
 * ones included; PostgreSQL's disk_full, out_of_memory, too_many_connections,
 * io_error). Not the caller's doing, and not a verdict on its data: the
 * store's trouble, worth retrying like an unreachable server.
 */
const STORAGE_FAULT = /^SQLITE_(FULL|IOERR|CANTOPEN|NOMEM|READONLY)(_|$)/;
const STORAGE_FAULT_PG = new Set(["53100", "53200", "53300", "58030"]);

export function isStorageFault(e: unknown): boolean {
  const code = codeOf(e);
  return code !== undefined && (STORAGE_FAULT.test(code) || STORAGE_FAULT_PG.has(code));
}

export function isUnavailable(e: unknown): boolean {
  const code = codeOf(e);
  if (code && UNAVAILABLE.has(code)) return true;
  return /ECONNREFUSED|ECONNRESET|Connection terminated|terminating connection|Can't reach database|Server has closed the connection|the database system is (starting up|shutting down)|Connection ended/i.test(
    messageOf(e),
  );
}

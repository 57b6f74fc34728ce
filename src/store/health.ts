/**
 * What the store's real outcomes say about it, for /healthz: whether the
 * last calls failed (a full disk, a corrupt file, a server that is down),
 * and on SQLite whether the file is still the one that was opened
 * (sqlite/file-identity.ts).
 */
export interface StoreHealthReport {
  ok: boolean;
  /** Why not, for the operator. */
  reason?: string;
  /** Set once the SQLite file was deleted or replaced: every call is refused from then on. */
  fenced?: boolean;
}

/** How long a failure with no success after it keeps the store reported down. */
const FAILURE_WINDOW_MS = 30_000;

export class StoreOutcomes {
  #lastSuccessAt = 0;
  #lastFailureAt = 0;
  #lastFailure = "";

  success(): void {
    this.#lastSuccessAt = Date.now();
  }

  failure(op: string, err: unknown): void {
    this.#lastFailureAt = Date.now();
    const e = err as { code?: unknown; cause?: { code?: unknown }; message?: unknown };
    const code = typeof e?.cause?.code === "string" ? e.cause.code : typeof e?.code === "string" ? e.code : "";
    this.#lastFailure = `"${op}" failed${code ? ` (${code})` : ""}: ${String(e?.message ?? err).slice(0, 200)}`;
  }

  report(now = Date.now()): StoreHealthReport {
    if (this.#lastFailureAt > this.#lastSuccessAt && now - this.#lastFailureAt < FAILURE_WINDOW_MS)
      return { ok: false, reason: `the last store call ${this.#lastFailure}; none has succeeded since` };
    return { ok: true };
  }
}

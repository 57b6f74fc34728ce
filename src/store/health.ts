import fs from "node:fs";

/**
 * What the store's real outcomes say about it, for /healthz: whether the
 * last calls failed (a full disk, a corrupt file, a server that is down),
 * and on SQLite whether the file is still the one that was opened.
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

/**
 * The SQLite file's identity (device and inode) as opened. A file deleted
 * or replaced under a running process keeps taking writes into the old,
 * unlinked inode, which the next start never sees: everything acknowledged
 * meanwhile would be lost. `changed()` says how it changed, if it did.
 */
export class FileIdentity {
  readonly #dev: number;
  readonly #ino: number;

  constructor(readonly file: string) {
    const st = fs.statSync(file);
    this.#dev = st.dev;
    this.#ino = st.ino;
  }

  changed(): string | undefined {
    let st: fs.Stats;
    try {
      st = fs.statSync(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return `the SQLite file ${this.file} was deleted while the gateway was running`;
      return `the SQLite file ${this.file} cannot be checked (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
    }
    if (st.dev !== this.#dev || st.ino !== this.#ino) return `the SQLite file ${this.file} was replaced by another file while the gateway was running`;
    return undefined;
  }
}

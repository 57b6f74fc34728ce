import Sqlite from "better-sqlite3";

/**
 * Fault injection for tests: make a named store call site fail, once or for
 * a while, with the error the driver itself raises, through the `faults`
 * hooks of DatabaseOptions (AppOptions.faults), which nothing in src/ sets
 * (src/store/db.ts, StoreFaults).
 *
 * Call sites are the `op` names every Database call carries ("record-inbound",
 * "commit-turn", "lease-renew", "ensure-user", ...). Database calls
 * `onStatement(op)` once per attempt of each call, on both providers, before
 * the statement runs; a retryable error (SQLITE_BUSY) is retried there exactly
 * as a real one would be.
 */
export type FaultKind = "SQLITE_FULL" | "SQLITE_BUSY" | "SQLITE_IOERR" | "ECONNRESET";

/** The error the driver raises for each fault (better-sqlite3's SqliteError; a socket reset as node and pg report it). */
export function faultError(kind: FaultKind, op: string): Error {
  switch (kind) {
    case "SQLITE_FULL":
      return new Sqlite.SqliteError("database or disk is full", "SQLITE_FULL");
    case "SQLITE_BUSY":
      return new Sqlite.SqliteError("database is locked", "SQLITE_BUSY");
    case "SQLITE_IOERR":
      return new Sqlite.SqliteError("disk I/O error", "SQLITE_IOERR");
    case "ECONNRESET":
      return Object.assign(new Error(`read ECONNRESET (injected at "${op}")`), { code: "ECONNRESET", errno: -104, syscall: "read" });
  }
}

interface Rule {
  op: string | RegExp;
  kind: FaultKind;
  /** Failures left (once: 1), or Infinity while `until` holds. */
  remaining: number;
  until?: number;
}

export class FaultPlan {
  readonly #rules: Rule[] = [];
  /** Calls seen per op (every attempt), and failures injected per op. */
  readonly calls = new Map<string, number>();
  readonly injected = new Map<string, number>();

  /** The next call of `op` fails (n calls, by default one). */
  once(op: string | RegExp, kind: FaultKind, n = 1): this {
    this.#rules.push({ op, kind, remaining: n });
    return this;
  }

  /** Every call of `op` fails for the next `ms` milliseconds. */
  for(op: string | RegExp, ms: number, kind: FaultKind): this {
    this.#rules.push({ op, kind, remaining: Infinity, until: Date.now() + ms });
    return this;
  }

  clear(): void {
    this.#rules.length = 0;
  }

  /** Whether any rule is still armed. */
  get armed(): boolean {
    const now = Date.now();
    return this.#rules.some((r) => r.remaining > 0 && (r.until === undefined || r.until > now));
  }

  /** The StoreFaults seam: throws the injected error for a matching, armed rule. */
  readonly onStatement = (op: string): void => {
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    const now = Date.now();
    for (const r of this.#rules) {
      if (r.remaining <= 0 || (r.until !== undefined && r.until <= now)) continue;
      if (typeof r.op === "string" ? r.op !== op : !r.op.test(op)) continue;
      r.remaining--;
      this.injected.set(op, (this.injected.get(op) ?? 0) + 1);
      throw faultError(r.kind, op);
    }
  };
}

/**
 * The acknowledgement of one commit of `op` lost, its write landed (the `afterCommit` seam: the caller is
 * told CommitUnknown). Armed from the start, or from `arm()`; `armed` is false once it has struck.
 */
export class LostAck {
  armed: boolean;
  constructor(
    readonly op: string,
    opts: { armed?: boolean } = {},
  ) {
    this.armed = opts.armed ?? true;
  }
  arm(): void {
    this.armed = true;
  }
  afterCommit = (op: string): void => {
    if (op !== this.op || !this.armed) return;
    this.armed = false;
    throw new Error(`the acknowledgement of "${op}" was lost (injected)`);
  };
}

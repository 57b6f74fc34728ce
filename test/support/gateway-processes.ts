import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { migrate } from "../../src/store/index.js";
import { freshDatabaseUrl } from "./db.js";
import { LoopbackPlatform } from "./loopback-platform.js";

/** A real gateway process (test/support/gateway-child.ts) with this environment; resolves once it serves. */
export function startGateway(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/support/gateway-child.ts")], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d) => {
      const m = /READY (\S+)/.exec(String(d));
      if (m) resolve({ child, url: m[1]! });
    });
    child.once("exit", (code) => reject(new Error(`gateway exited ${code} before READY: ${err.slice(0, 1500)}`)));
  });
}

/** A round-robin loopback proxy across the gateway processes, as a load balancer in front of webhooks. */
export function roundRobin(targets: string[]): Promise<{ url: string; close(): Promise<void> }> {
  let next = 0;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const target = targets[next++ % targets.length]!;
    const r = await fetch(`${target}${req.url}`, { method: req.method, body: Buffer.concat(chunks), headers: { "content-type": "application/json" } });
    res.writeHead(r.status, { "content-type": "application/json" });
    res.end(await r.text());
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
      }),
    ),
  );
}

/**
 * Three gateway processes in shared mode (SHARED_DATABASE=true) on one fresh, migrated PostgreSQL database,
 * fed by one loopback platform in webhook mode behind a round-robin proxy, so consecutive messages of one
 * chat land on different processes: where every multi-process test starts. `extraEnv` adds to each
 * process's environment. The caller stops the children and the platform.
 */
export async function startSharedCluster(extraEnv: Record<string, string> = {}) {
  const platform = new LoopbackPlatform();
  const platformUrl = await platform.start();
  const dbUrl = await freshDatabaseUrl("postgresql");
  await migrate(dbUrl);
  const env = {
    DATABASE_URL: dbUrl,
    HTTP_PORT: "0",
    DM_POLICY: "open",
    SHARED_DATABASE: "true",
    LOOPBACK_URL: platformUrl,
    LOOPBACK_MODE: "webhook",
    LOG_LEVEL: "warn",
    ...extraEnv,
  };
  const gateways = await Promise.all([startGateway(env), startGateway(env), startGateway(env)]);
  const proxy = await roundRobin(gateways.map((g) => g.url));
  return { platform, dbUrl, gateways, proxy };
}

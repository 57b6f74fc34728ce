/**
 * Probe: inbound hooks (`POST /hooks/<name>`) against forged, replayed and
 * hostile deliveries, through the whole app on a real SQLite file.
 *
 * - The signature covers `<t>.<delivery id>.<body>`, not the hook's name, and
 *   the delivery id is deduplicated per hook (`hook:<name>:<id>`). Two hooks
 *   configured with one secret therefore took the same captured request
 *   each: replayed to the other hook within the 5 minutes, it ran a second
 *   turn, with another hook's prompt and conversation. HOOKS_CONFIG now
 *   refuses a secret used by two hooks (as API_TOKENS refuses a repeated
 *   token).
 * - A signed JSON body nested deeply, read by `{{json.<field>}}`, made
 *   JSON.stringify overflow the stack: a 500 for every retry of the
 *   delivery, which the sender retries for ever. Now the field is left empty
 *   like any field that cannot be shown.
 * - Held: a timestamp 400 s ahead, or given in milliseconds, or a second
 *   Switchboard-Signature header carrying a fresh `t` beside a captured
 *   `v1` (raw socket), gets 401; a replay after a restart is a duplicate.
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { createApp, type App } from "../../../src/gateway/app.js";
import { sign, signatureHeader } from "../../../src/gateway/http/api/signature.js";
import { silentLogger } from "../../../src/log.js";
import { eventually } from "../../support/app.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";

const A = "hook-secret-A-0123456789abcdef0123456789";
const B = "hook-secret-B-0123456789abcdef0123456789";
const CHAT = "-100500";

const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0).reverse()) await a.stop();
});

const config = (url: string, hooks: unknown) =>
  loadConfig({ DATABASE_URL: url, HTTP_PORT: "0", LOG_LEVEL: "silent", DM_POLICY: "open", HOOKS_CONFIG: JSON.stringify(hooks) });

async function start(url: string, hooks: unknown, greet = true) {
  const adapter = new MemoryAdapter();
  const app = await createApp(config(url, hooks), { log: silentLogger, adapters: () => [adapter] });
  apps.push(app);
  const base = (await app.start()).replace("0.0.0.0", "127.0.0.1");
  if (greet) {
    await adapter.ctx.inbound(adapter.group(CHAT, "5", "@membot hi", { mentioned: true }));
    await eventually(
      () => adapter.to(CHAT).length,
      (n) => n >= 1,
      10_000,
      "the group's echo",
    );
  }
  return { app, adapter, base };
}

const post = async (base: string, name: string, body: string, headers: Record<string, string>) => {
  const r = await fetch(`${base}/hooks/${name}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  await r.arrayBuffer();
  return r.status;
};

const hook = (secret: string, prompt: string) => ({ secret, conversation: { platform: "telegram", chat: CHAT }, prompt });

describe("probe: hook deliveries, forged and replayed", () => {
  it("a delivery captured for one hook runs no turn when replayed to another hook (a secret shared by two hooks is refused)", async () => {
    const shared = { deploys: hook(A, "Deploy: {{body}}"), alerts: hook(A, "Alert: {{body}}") };
    const url = await freshMigratedSqliteUrl();
    let refused: Error | undefined;
    try {
      config(url, shared);
    } catch (e) {
      refused = e as Error;
    }
    if (refused) {
      expect(refused.message).toMatch(/secret/);
      expect(refused.message).not.toContain(A);
      return;
    }
    const { adapter, base } = await start(url, shared);
    const body = JSON.stringify({ status: "ok" });
    const headers = { "switchboard-delivery": "d-1", "switchboard-signature": signatureHeader(A, "d-1", body) };
    expect(await post(base, "deploys", body, headers)).toBe(202);
    await eventually(
      () => adapter.to(CHAT).filter((s) => s.text.includes("Deploy:")).length,
      (n) => n === 1,
      10_000,
      "the deploy turn",
    );
    // The same bytes, to the other hook: a second turn for one delivery.
    expect(await post(base, "alerts", body, headers)).toBe(401);
  });

  it("a deeply nested JSON body read by {{json.<field>}} is accepted (no 500 for ever) and runs one turn", async () => {
    const { adapter, base } = await start(await freshMigratedSqliteUrl(), {
      deploys: { ...hook(A, "Deploy {{json.status}}: {{json.detail}}"), maxBodyBytes: 1024 * 1024 },
    });
    const depth = 200_000;
    const body = `{"status":"nested","detail":${"[".repeat(depth)}${"]".repeat(depth)}}`;
    const status = await post(base, "deploys", body, { "switchboard-delivery": "deep-1", "switchboard-signature": signatureHeader(A, "deep-1", body) });
    expect(status).toBe(202);
    await eventually(
      () => adapter.to(CHAT).filter((s) => s.text.includes("Deploy nested")).length,
      (n) => n === 1,
      10_000,
      "the nested delivery's turn",
    );
  });

  it("stale, future, millisecond and doubled-header timestamps get 401; a replay after a restart is a duplicate", async () => {
    const url = await freshMigratedSqliteUrl();
    const hooks = { deploys: hook(A, "Deploy: {{body}}"), alerts: hook(B, "Alert: {{body}}") };
    const first = await start(url, hooks);
    const body = JSON.stringify({ status: "ok" });
    const now = Math.floor(Date.now() / 1000);
    const at = (t: number, id: string) => ({ "switchboard-delivery": id, "switchboard-signature": `t=${t},v1=${sign(A, t, id, body)}` });
    expect(await post(first.base, "deploys", body, at(now + 400, "f-1"))).toBe(401);
    expect(await post(first.base, "deploys", body, at(now - 400, "f-2"))).toBe(401);
    expect(await post(first.base, "deploys", body, at(now * 1000, "f-3"))).toBe(401);
    expect(await post(first.base, "deploys", body, at(0, "f-4"))).toBe(401);

    // A captured v1 (signed over an old t) beside a second header carrying a fresh t, over a raw socket.
    const old = now - 400;
    const captured = sign(A, old, "f-5", body);
    const { host, port, hostname } = new URL(first.base);
    const raw =
      `POST /hooks/deploys HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Switchboard-Delivery: f-5\r\nSwitchboard-Signature: t=${old},v1=${captured}\r\nSwitchboard-Signature: t=${now}\r\nConnection: close\r\n\r\n${body}`;
    const answer = await new Promise<string>((resolve, reject) => {
      let got = "";
      const s = net.connect(Number(port), hostname, () => s.end(raw));
      s.setEncoding("latin1");
      s.on("data", (d: string) => (got += d));
      s.once("error", reject);
      s.once("end", () => resolve(got));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);

    const good = at(now, "r-1");
    expect(await post(first.base, "deploys", body, good)).toBe(202);
    await eventually(
      () => first.adapter.to(CHAT).filter((s) => s.text.includes("Deploy:")).length,
      (n) => n === 1,
      10_000,
      "the turn",
    );
    await first.app.stop();
    apps.splice(apps.indexOf(first.app), 1);
    const second = await start(url, hooks, false);
    expect(await post(second.base, "deploys", body, good)).toBe(200);
  });
});

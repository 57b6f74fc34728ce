/**
 * Probe: inbound hook signatures. The HMAC covers `<t>.<delivery id>.<body>`,
 * and a delivery id may itself contain "." (signature.ts DELIVERY), so a
 * captured delivery "evt.1" with body B is also a valid signature for
 * delivery "evt" with body "1." + B: a replay under a new id, which the
 * delivery-id dedupe does not catch, runs another agent turn. Also: another
 * hook's secret, and an API bearer token in place of a signature, get 401.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { createApp, type App } from "../../../src/gateway/app.js";
import { signatureHeader } from "../../../src/gateway/http/api/signature.js";
import { silentLogger } from "../../../src/log.js";
import { eventually } from "../../support/app.js";
import { freshDatabaseUrl } from "../../support/db.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";

const A = "hook-secret-A-0123456789abcdef0123456789";
const B = "hook-secret-B-0123456789abcdef0123456789";
const OP = "operator-token-probe-0123456789abcdef";
const HOOKS = JSON.stringify({
  deploys: { secret: A, conversation: { platform: "telegram", chat: "-100200" }, prompt: "Deploy: {{body}}" },
  alerts: { secret: B, conversation: { platform: "telegram", chat: "-100200" }, prompt: "Alert: {{body}}" },
});

let app: App | undefined;
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

const post = async (base: string, name: string, body: string, headers: Record<string, string>) => {
  const r = await fetch(`${base}/hooks/${name}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  await r.arrayBuffer();
  return r.status;
};

describe("probe: hook signatures", () => {
  async function start() {
    const adapter = new MemoryAdapter();
    app = await createApp(
      loadConfig({
        DATABASE_URL: await freshDatabaseUrl("sqlite"),
        HTTP_PORT: "0",
        LOG_LEVEL: "silent",
        DM_POLICY: "open",
        HOOKS_CONFIG: HOOKS,
        OPERATOR_TOKEN: OP,
      }),
      { log: silentLogger, adapters: () => [adapter] },
    );
    const base = (await app.start()).replace("0.0.0.0", "127.0.0.1");
    await adapter.ctx.inbound(adapter.group("-100200", "5", "@membot hi", { mentioned: true }));
    await eventually(
      () => adapter.to("-100200").length,
      (n) => n === 1,
      10_000,
      "the group's echo",
    );
    return { adapter, base };
  }

  it("another hook's secret, or the operator's bearer token, is no signature", async () => {
    const { base } = await start();
    const body = JSON.stringify({ status: "ok" });
    expect(await post(base, "alerts", body, { "switchboard-delivery": "x1", "switchboard-signature": signatureHeader(A, "x1", body) })).toBe(401);
    expect(await post(base, "deploys", body, { "switchboard-delivery": "x1", authorization: `Bearer ${OP}` })).toBe(401);
    // Both secrets offered (as while rotating): the one that is this hook's passes, as documented; the other alone does not.
    const both = `${signatureHeader(B, "x2", body)},v1=${signatureHeader(A, "x2", body).split("v1=")[1]}`;
    expect(await post(base, "deploys", body, { "switchboard-delivery": "x2", "switchboard-signature": both })).toBe(202);
  });

  it("a captured delivery cannot be replayed under another delivery id by moving a '.' between the id and the body", async () => {
    const { adapter, base } = await start();
    const body = JSON.stringify({ status: "ok" });
    const turns = () => adapter.to("-100200").filter((s) => s.text.includes("Deploy:")).length;
    // The attack needs an id holding a '.' (`<t>.evt.1.{...}` signs the same as id "evt" with body "1.{...}"):
    // such an id is refused before anything runs, however well signed.
    expect(await post(base, "deploys", body, { "switchboard-delivery": "evt.1", "switchboard-signature": signatureHeader(A, "evt.1", body) })).toBe(401);
    // An id without one still works; the id and the body cannot trade characters then (t is digits, the id has no '.').
    const sig = signatureHeader(A, "evt", body);
    expect(await post(base, "deploys", body, { "switchboard-delivery": "evt", "switchboard-signature": sig })).toBe(202);
    await eventually(turns, (n) => n === 1, 10_000, "the first turn");
  });
});

import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { FaultPlan } from "../support/faults.js";
import { eventually, startApp } from "../support/app.js";
import { PROVIDERS } from "../support/db.js";

/** /healthz reports the store from real outcomes: writes that fail (a full disk) turn it 503 with the reason, and back. */
describe.each(PROVIDERS)("store health on %s", (provider) => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it("every write failing (the probe included) answers 503 with the reason; recovery answers 200 again", async () => {
    const faults = new FaultPlan();
    const started = await startApp(provider, [], {}, { faults, storeProbeMs: 100 });
    app = started.app;
    expect((await fetch(`${started.url}/healthz`)).status).toBe(200);
    const kind = provider === "sqlite" ? "SQLITE_FULL" : "ECONNRESET";
    faults.for(/.*/, 1500, kind);
    const down = await eventually(
      async () => {
        const r = await fetch(`${started.url}/healthz`);
        return { status: r.status, body: (await r.json()) as { store: { ok: boolean; reason?: string } } };
      },
      (r) => r.status === 503,
      10_000,
      "/healthz 503",
    );
    expect(down.body.store.ok).toBe(false);
    expect(down.body.store.reason).toContain(kind);
    await eventually(
      async () => (await fetch(`${started.url}/healthz`)).status,
      (s) => s === 200,
      15_000,
      "/healthz 200 again",
    );
    const metrics = await (await fetch(`${started.url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`switchboard_store_failures_total\\{op="kv-set",code="${kind}"\\} [1-9]`));
  });
});

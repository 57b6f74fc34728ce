/**
 * Probe (held when written): with no token configured, the API is open to
 * this machine only, so a web page in the operator's browser (another
 * Origin, `Sec-Fetch-Site: cross-site`, a form's text/plain body) and a
 * request a reverse proxy forwarded reach none of
 * `/api/v1/schedules`. And a chat's `/schedule` lists and cancels only its
 * own jobs, never another chat's.
 */
import { afterEach, describe, expect, it } from "vitest";
import { eventually, startApp } from "../../support/app.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("probe: the jobs API from a browser or a proxy, and jobs across chats", () => {
  it("tokenless: cross-site, form-encoded and proxied requests make and see no job", async () => {
    const adapter = new MemoryAdapter();
    const { app, url } = await startApp("sqlite", [adapter]);
    cleanups.push(() => app.stop());
    const base = url.replace("0.0.0.0", "127.0.0.1");
    await adapter.ctx.inbound(adapter.dm("42", "hello"));
    await eventually(
      () => adapter.to("42").length,
      (n) => n >= 1,
      10_000,
      "the echo",
    );
    const body = JSON.stringify({ conversation: { platform: "telegram", chat: "42" }, every: "1h", text: "x" });
    const json = { "content-type": "application/json" };
    const attempts: Array<[string, RequestInit, number]> = [
      ["another origin", { method: "POST", headers: { ...json, origin: "https://evil.example" }, body }, 403],
      ["null origin", { method: "POST", headers: { ...json, origin: "null" }, body }, 403],
      ["cross-site fetch", { method: "POST", headers: { ...json, "sec-fetch-site": "cross-site" }, body }, 403],
      ["same-site fetch", { method: "POST", headers: { ...json, "sec-fetch-site": "same-site" }, body }, 403],
      ["a form's body", { method: "POST", headers: { "content-type": "text/plain" }, body }, 415],
      ["forwarded by a proxy", { method: "POST", headers: { ...json, "x-forwarded-for": "203.0.113.9" }, body }, 401],
      ["Forwarded header", { method: "POST", headers: { ...json, forwarded: "for=203.0.113.9" }, body }, 401],
      ["cross-site listing", { method: "GET", headers: { "sec-fetch-site": "cross-site" } }, 403],
    ];
    for (const [what, init, status] of attempts) {
      const r = await fetch(`${base}/api/v1/schedules`, init);
      await r.arrayBuffer();
      expect(r.status, what).toBe(status);
    }
    expect(await app.jobs.service.list({ all: true })).toEqual([]);
    // The same request from this machine, as the API promises, works.
    const ok = await fetch(`${base}/api/v1/schedules`, { method: "POST", headers: json, body });
    expect(ok.status).toBe(201);
  });

  it("/schedule in one chat neither lists nor cancels another chat's jobs", async () => {
    const adapter = new MemoryAdapter();
    const { app } = await startApp("sqlite", [adapter]);
    cleanups.push(() => app.stop());
    await adapter.ctx.inbound(adapter.dm("42", "/remind in 1h secret plan of 42"));
    await adapter.ctx.inbound(adapter.group("-100700", "43", "/remind in 1h group note"));
    await eventually(
      () => adapter.sent.filter((s) => s.text.includes("Scheduled (1)")).length,
      (n) => n === 2,
      10_000,
      "both reminders",
    );
    await adapter.ctx.inbound(adapter.dm("44", "/schedule"));
    await adapter.ctx.inbound(adapter.dm("44", "/schedule cancel 1"));
    await adapter.ctx.inbound(adapter.group("-100701", "42", "/schedule cancel 1"));
    await eventually(
      () => adapter.to("44").length + adapter.to("-100701").length,
      (n) => n === 3,
      10_000,
      "the answers",
    );
    const seen = [...adapter.to("44"), ...adapter.to("-100701")].map((s) => s.text).join("\n");
    expect(seen).not.toContain("secret plan");
    expect(seen).not.toContain("group note");
    expect((await app.jobs.service.list()).map((j) => j.status)).toEqual(["active", "active"]);
  });
});

/**
 * Recovery while running: an event whose handling failed (the store full or
 * unreachable during the turn's commit, or while binding it) is retried in
 * the same process, and the chat's later events wait behind it. An event
 * that reaches its INBOUND_TTL unanswered gets a notice in its chat, an
 * error log and a metric. Never silence, never a restart needed.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { FaultPlan, type FaultKind } from "../support/faults.js";
import { eventually, startApp } from "../support/app.js";
import { PROVIDERS } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { parsePrometheus } from "../support/prometheus.js";

async function counter(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const samples = parsePrometheus(await (await fetch(`${url}/metrics`)).text());
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0);
}

describe.each(PROVIDERS)("recovery while running on %s", (provider) => {
  const kind: FaultKind = provider === "sqlite" ? "SQLITE_FULL" : "ECONNRESET";
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it("a turn whose commit fails is retried in the same process; the chat's later messages wait behind it", async () => {
    const faults = new FaultPlan();
    const adapter = new MemoryAdapter();
    const s = await startApp(provider, [adapter], {}, { faults });
    app = s.app;
    // The disk is full for 1.5 s from the first turn's commit on.
    faults.for("commit-turn", 1500, kind);
    const texts = ["first", "second", "third", "fourth"];
    for (const t of texts) expect((await adapter.ctx.inbound(adapter.dm("41", t))).status).toBe("accepted");
    await eventually(
      () => adapter.sent.length,
      (n) => n >= texts.length,
      30_000,
      "every answer",
    );
    await app.gateway.idle();
    expect(adapter.sent.map((m) => m.text)).toEqual(texts.map((t) => `echo: ${t}`));
    const injected = faults.injected.get("commit-turn") ?? 0;
    expect(injected).toBeGreaterThan(0);
    expect(await counter(s.url, "switchboard_internal_errors_total", { where: "turn-commit" })).toBe(injected);
    console.log(`[recovery ${provider}] commit failures injected ${injected}, answered ${adapter.sent.length} of ${texts.length}, in order`);
  });

  it("binding an event that fails (identity writes) is retried; order kept", async () => {
    const faults = new FaultPlan();
    const adapter = new MemoryAdapter();
    const s = await startApp(provider, [adapter], {}, { faults });
    app = s.app;
    faults.for(/^ensure-user$/, 800, kind);
    for (const t of ["a", "b", "c"]) expect((await adapter.ctx.inbound(adapter.dm("42", t))).status).toBe("accepted");
    await eventually(
      () => adapter.sent.length,
      (n) => n >= 3,
      30_000,
      "every answer",
    );
    expect(adapter.sent.map((m) => m.text)).toEqual(["echo: a", "echo: b", "echo: c"]);
    expect(await counter(s.url, "switchboard_internal_errors_total", { where: "inbound-handle" })).toBeGreaterThan(0);
  });

  it("an event whose commit keeps failing until its TTL gets a notice in its chat, an error log and a metric", async () => {
    const faults = new FaultPlan();
    const adapter = new MemoryAdapter();
    const s = await startApp(provider, [adapter], { INBOUND_TTL: "2s" }, { faults });
    app = s.app;
    faults.for("commit-turn", 60_000, kind);
    const env = adapter.dm("43", "lost in the storm");
    expect((await adapter.ctx.inbound(env)).status).toBe("accepted");
    await eventually(
      () => adapter.sent.length,
      (n) => n >= 1,
      20_000,
      "the notice",
    );
    const hhmm = env.occurredAt.toISOString().slice(11, 16);
    expect(adapter.sent.map((m) => m.text)).toEqual([`I couldn't answer your message from ${hhmm} UTC; please send it again.`]);
    expect(adapter.sent[0]!.chatId).toBe("43");
    expect(await counter(s.url, "switchboard_unanswered_total")).toBe(1);
    faults.clear();
    const rows = await app.db.query("t", app.db.q.selectFrom("InboundEvent").select("status"));
    expect(rows.map((r) => r.status)).toEqual(["expired"]);
  });
});

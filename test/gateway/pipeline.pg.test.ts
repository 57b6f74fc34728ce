import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../../src/gateway/app.js";
import { PROVIDERS } from "../support/db.js";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { slowAgent } from "../support/runtime.js";
import { prisma } from "../support/prisma.js";

describe.each(PROVIDERS)("gateway pipeline on %s", (provider) => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  async function start(env: Record<string, string> = {}, adapter = new MemoryAdapter()) {
    const r = await startApp(provider, [adapter], env);
    app = r.app;
    return { adapter, url: r.url };
  }

  it("answers a DM once, through the adapter's sink, quoting the user's message", async () => {
    const { adapter } = await start();
    const env = adapter.dm("42", "hello");
    expect(await adapter.ctx.inbound(env)).toMatchObject({ status: "accepted" });
    const [reply] = await eventually(
      () => adapter.to("42"),
      (s) => s.length === 1,
    );
    expect(reply).toMatchObject({ text: "echo: hello", replyToMessageId: env.messageId });
  });

  it("drops a duplicate delivery of the same event id, before and after it was handled", async () => {
    const { adapter } = await start();
    const env = adapter.dm("43", "once");
    const results = await Promise.all([adapter.ctx.inbound(env), adapter.ctx.inbound(env), adapter.ctx.inbound({ ...env })]);
    expect(results.map((r) => r.status).sort()).toEqual(["accepted", "duplicate", "duplicate"]);
    await eventually(
      () => adapter.to("43"),
      (s) => s.length === 1,
    );
    expect((await adapter.ctx.inbound(env)).status).toBe("duplicate");
    await app!.gateway.idle();
    await new Promise((r) => setTimeout(r, 100));
    expect(adapter.to("43")).toHaveLength(1);
    const metrics = await app!.metrics.text();
    expect(metrics).toMatch(/switchboard_duplicates_dropped_total\{platform="telegram"\} 3/);
  });

  it("never answers an event older than INBOUND_TTL", async () => {
    const { adapter } = await start({ INBOUND_TTL: "60s" });
    const old = adapter.dm("44", "from yesterday", { occurredAt: new Date(Date.now() - 120_000) });
    expect((await adapter.ctx.inbound(old)).status).toBe("expired");
    expect((await adapter.ctx.inbound(old)).status).toBe("duplicate");
    await adapter.ctx.inbound(adapter.dm("44", "fresh"));
    await eventually(
      () => adapter.to("44"),
      (s) => s.length === 1,
    );
    expect(adapter.to("44").map((s) => s.text)).toEqual(["echo: fresh"]);
  });

  it("ignores messages from bots", async () => {
    const { adapter } = await start();
    expect((await adapter.ctx.inbound(adapter.dm("45", "beep", { senderIsBot: true }))).status).toBe("ignored");
  });

  it("gates groups on mentions but keeps unaddressed messages as context", async () => {
    const { adapter } = await start({ GROUP_REQUIRE_MENTION: "true" });
    await adapter.ctx.inbound(adapter.group("-100", "1", "chatter"));
    await adapter.ctx.inbound(adapter.group("-100", "2", "/new@otherbot"));
    await adapter.ctx.inbound(adapter.group("-100", "2", "@membot hi", { mentioned: true }));
    await eventually(
      () => adapter.to("-100"),
      (s) => s.length === 1,
    );
    expect(adapter.to("-100")[0]!.text).toBe("echo: @membot hi");
    await app!.gateway.idle();
    const [session] = await app!.registry.listAll({ limit: 10 });
    const rows = await prisma(app!.registry.store.db).read((c) => c.message.findMany({ where: { sessionId: session!.id }, orderBy: { seq: "asc" } }));
    expect(rows.map((r) => r.content)).toEqual(["chatter", "@membot hi", "echo: @membot hi"]);
  });

  it("answers every group message when GROUP_REQUIRE_MENTION=false, and a plain /command is addressed to the bot", async () => {
    const { adapter } = await start({ GROUP_REQUIRE_MENTION: "false" });
    await adapter.ctx.inbound(adapter.group("-200", "1", "anyone there"));
    await eventually(
      () => adapter.to("-200"),
      (s) => s.length === 1,
    );
    await app!.stop();
    app = undefined;
    const gated = await start({ GROUP_REQUIRE_MENTION: "true" });
    await gated.adapter.ctx.inbound(gated.adapter.group("-300", "1", "/status"));
    const [status] = await eventually(
      () => gated.adapter.to("-300"),
      (s) => s.length === 1,
    );
    expect(status!.text).toMatch(/^session: /);
  });

  describe("DM access", () => {
    it("pairing: an unknown DM gets a one-time code, nothing reaches the agent, and approval lets them in", async () => {
      const { adapter } = await start({ DM_POLICY: "pairing" });
      await adapter.ctx.inbound(adapter.dm("50", "let me in"));
      const [first] = await eventually(
        () => adapter.to("50"),
        (s) => s.length === 1,
      );
      const code = /pairing code is ([A-Z0-9]{8})/.exec(first!.text)?.[1];
      expect(code).toBeDefined();
      await adapter.ctx.inbound(adapter.dm("50", "again"));
      const second = await eventually(
        () => adapter.to("50"),
        (s) => s.length === 2,
      );
      expect(second[1]!.text).toContain(code!);
      expect(await app!.registry.listAll()).toEqual([]);
      const approved = await new (await import("../../src/gateway/inbound/pairing.js")).Pairing(
        new (await import("../../src/store/access.js")).AccessStore(app!.db),
      ).approve(code!);
      expect(typeof approved).toBe("object");
      await adapter.ctx.inbound(adapter.dm("50", "thanks"));
      const third = await eventually(
        () => adapter.to("50"),
        (s) => s.length === 3,
      );
      expect(third[2]!.text).toBe("echo: thanks");
    });

    it("pairing: at most 3 codes are pending per bot; a 4th stranger replaces the oldest, and asking again at once repeats the code", async () => {
      const { adapter } = await start({ DM_POLICY: "pairing" });
      for (const u of ["61", "62", "63", "64"]) await adapter.ctx.inbound(adapter.dm(u, "hi"));
      await eventually(
        () => adapter.sent,
        (s) => s.length === 4,
      );
      const texts = ["61", "62", "63", "64"].map((u) => adapter.to(u)[0]!.text);
      expect(texts.filter((t) => /pairing code is/.test(t))).toHaveLength(4);
      const pending = await new (await import("../../src/gateway/inbound/pairing.js")).Pairing(
        new (await import("../../src/store/access.js")).AccessStore(app!.db),
      ).list();
      expect(pending).toHaveLength(3);
      // The four were handled concurrently: any three of them hold the pending slots.
      const holder = pending[0]!.senderId;
      expect(["61", "62", "63", "64"]).toContain(holder);
      // A pending sender asks again: the same code, no new request.
      await adapter.ctx.inbound(adapter.dm(holder, "again"));
      await eventually(
        () => adapter.to(holder),
        (s) => s.length === 2,
      );
      const code = (t: string) => /pairing code is ([A-Z0-9]{8})/.exec(t)?.[1];
      expect(code(adapter.to(holder)[1]!.text)).toBe(pending[0]!.code);
    });

    it("allowlist: only ALLOW_FROM senders reach the agent", async () => {
      const { adapter } = await start({ DM_POLICY: "allowlist", ALLOW_FROM: "telegram:70" });
      await adapter.ctx.inbound(adapter.dm("70", "friend"));
      await adapter.ctx.inbound(adapter.dm("71", "stranger"));
      await eventually(
        () => adapter.sent,
        (s) => s.length === 2,
      );
      expect(adapter.to("70")[0]!.text).toBe("echo: friend");
      expect(adapter.to("71")[0]!.text).toMatch(/only talks to people on its allowlist/);
    });

    it("operators can approve a code from chat with /approve; others cannot", async () => {
      const { adapter } = await start({ DM_POLICY: "pairing", ADMIN_USERS: "telegram:1" });
      await adapter.ctx.inbound(adapter.dm("80", "hello"));
      const code = /pairing code is ([A-Z0-9]{8})/.exec(
        (
          await eventually(
            () => adapter.to("80"),
            (s) => s.length === 1,
          )
        )[0]!.text,
      )![1]!;
      await adapter.ctx.inbound(adapter.dm("1", `/approve ${code}`));
      expect(
        (
          await eventually(
            () => adapter.to("1"),
            (s) => s.length === 1,
          )
        )[0]!.text,
      ).toBe("Approved 80 on telegram.");
    });
  });

  it("a message over MAX_INBOUND_CHARS gets a clear 'too long' reply and nothing breaks", async () => {
    const { adapter } = await start({ MAX_INBOUND_CHARS: "1000" });
    await adapter.ctx.inbound(adapter.dm("90", "x".repeat(1_000_000)));
    const [r] = await eventually(
      () => adapter.to("90"),
      (s) => s.length === 1,
    );
    expect(r!.text).toMatch(/too long \(1000000 characters; the limit is 1000\)/);
    await adapter.ctx.inbound(adapter.dm("90", "short"));
    await eventually(
      () => adapter.to("90"),
      (s) => s.length === 2,
    );
    expect(adapter.to("90")[1]!.text).toBe("echo: short");
  });

  it("chunks a long reply at the adapter's limit, keeping code fences intact, first chunk quoting the user", async () => {
    const adapter = new MemoryAdapter("777", {
      maxTextLength: 200,
      editIntervalMs: { private: 100, group: 100 },
      perChat: { ratePerSec: 1000, burst: 1000 },
      global: { ratePerSec: 1000, burst: 1000 },
      canEdit: true,
    });
    await start({}, adapter);
    const code = Array.from({ length: 30 }, (_, i) => `const line${i} = ${i};`).join("\n");
    const env = adapter.dm("91", `Here is the code:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nThat is all.`);
    await adapter.ctx.inbound(env);
    const chunks = await eventually(
      () => adapter.to("91"),
      (s) => s.length > 2,
    );
    await app!.gateway.idle();
    for (const c of adapter.to("91")) {
      expect(c.text.length).toBeLessThanOrEqual(200);
      expect((c.text.match(/```/g) ?? []).length % 2).toBe(0);
    }
    expect(chunks[0]!.replyToMessageId).toBe(env.messageId);
    expect(chunks.slice(1).every((c) => c.replyToMessageId === undefined)).toBe(true);
    expect(new Set(chunks.map((c) => c.idempotencyKey)).size).toBe(chunks.length);
  });

  it("a 429 with retry_after delays replies, in order, and drops none", async () => {
    const { adapter } = await start();
    adapter.rateLimitNext = 3;
    adapter.retryAfterMs = 150;
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) await adapter.ctx.inbound(adapter.dm("92", `m${i}`));
    const sent = await eventually(
      () => adapter.to("92"),
      (s) => s.length === 5,
    );
    expect(sent.map((s) => s.text)).toEqual(["echo: m0", "echo: m1", "echo: m2", "echo: m3", "echo: m4"]);
    expect(sent[0]!.at - t0).toBeGreaterThanOrEqual(3 * 150);
    expect(await app!.metrics.text()).toMatch(/switchboard_rate_limited_total\{platform="telegram"\} 3/);
  });

  it("a failing typing call is logged and skipped; the reply still goes out", async () => {
    const adapter = new MemoryAdapter();
    adapter.failTyping = true;
    // Typing shows once a turn runs past its delay (500 ms): this agent takes longer.
    app = (await startApp(provider, [adapter], {}, { agentFactory: () => slowAgent(["slow ", "answer"], 400) })).app;
    await adapter.ctx.inbound(adapter.dm("93", "hi"));
    await eventually(
      () => adapter.to("93"),
      (s) => s.length >= 1,
    );
    expect(adapter.typingCalls).toContain("93");
  });

  it("a quick answer goes out without a typing call", async () => {
    const { adapter } = await start();
    await adapter.ctx.inbound(adapter.dm("95", "hi"));
    await eventually(
      () => adapter.to("95"),
      (s) => s.length === 1,
    );
    await new Promise((r) => setTimeout(r, 600));
    expect(adapter.typingCalls).not.toContain("95");
  });

  it("/new through the gateway rotates the DM's binding", async () => {
    const { adapter } = await start();
    await adapter.ctx.inbound(adapter.dm("94", "one"));
    await eventually(
      () => adapter.to("94"),
      (s) => s.length === 1,
    );
    const before = (await app!.registry.listAll())[0]!;
    await adapter.ctx.inbound(adapter.dm("94", "/new"));
    await eventually(
      () => adapter.to("94"),
      (s) => s.length === 2,
    );
    await adapter.ctx.inbound(adapter.dm("94", "two"));
    await eventually(
      () => adapter.to("94"),
      (s) => s.length === 3,
    );
    const all = await app!.registry.listAll({ includeArchived: true });
    expect(all).toHaveLength(2);
    const current = all.find((s) => !s.archived)!;
    expect(current.parentId).toBe(before.id);
    expect(adapter.to("94").map((s) => s.text)).toEqual(["echo: one", `Started a fresh session. session: ${current.id}`, "echo: two"]);
  });

  it("a /new that reaches a fresh session holding nothing yet is the same rotation again: 'already started'; after a message it rotates", async () => {
    const { adapter } = await start();
    await adapter.ctx.inbound(adapter.dm("96", "one"));
    await eventually(
      () => adapter.to("96"),
      (s) => s.length === 1,
    );
    await adapter.ctx.inbound(adapter.dm("96", "/new"));
    await eventually(
      () => adapter.to("96"),
      (s) => s.length === 2,
    );
    // Recorded after the first rotation committed (a webhook that arrived a moment later): no arrival stamp.
    await adapter.ctx.inbound(adapter.dm("96", "/new"));
    await eventually(
      () => adapter.to("96"),
      (s) => s.length === 3,
    );
    expect(adapter.to("96")[2]!.text).toBe("A fresh session was already started.");
    await adapter.ctx.inbound(adapter.dm("96", "two"));
    await adapter.ctx.inbound(adapter.dm("96", "/new"));
    await eventually(
      () => adapter.to("96"),
      (s) => s.length === 5,
    );
    expect(adapter.to("96")[4]!.text).toMatch(/^Started a fresh session\. session: /);
    expect(await app!.registry.listAll({ includeArchived: true })).toHaveLength(3);
  });

  it("/healthz reports readiness per adapter and reflects one that is down; /metrics parses as Prometheus text", async () => {
    const { adapter, url } = await start();
    let h = (await (await fetch(`${url}/healthz`)).json()) as { adapters: Array<Record<string, unknown>> };
    expect(h).toEqual({
      status: "ok",
      ready: true,
      store: { provider: expect.stringMatching(/^(sqlite|postgresql)$/), ok: true },
      down: [],
      adapters: [{ platform: "telegram", botId: "777", ready: true }],
    });
    adapter.ready = false;
    const res = await fetch(`${url}/healthz?ready=1`);
    expect(res.status).toBe(503);
    h = (await res.json()) as typeof h;
    expect(h.adapters[0]).toMatchObject({ ready: false, detail: "connection lost" });
    expect(h).toMatchObject({ down: ["telegram:777 (connection lost)"] });
    const text = await (await fetch(`${url}/metrics`)).text();
    const { parsePrometheus } = await import("../support/prometheus.js");
    const samples = parsePrometheus(text);
    expect(samples.find((s) => s.name === "switchboard_adapter_up")).toMatchObject({ labels: { platform: "telegram", bot: "777" }, value: 0 });
    for (const name of [
      "switchboard_inbound_total",
      "switchboard_outbound_total",
      "switchboard_duplicates_dropped_total",
      "switchboard_expired_total",
      "switchboard_rate_limited_total",
      "switchboard_outbound_queue_depth",
      "switchboard_turn_latency_seconds",
      "switchboard_internal_errors_total",
      "switchboard_store_failures_total",
      "switchboard_unanswered_total",
    ]) {
      expect(text).toContain(`# TYPE ${name}`);
    }
  });
});

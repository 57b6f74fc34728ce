/**
 * Fault injection at every store call site, in turn, while traffic runs
 * (issue #20, acceptance 1). The call sites are the ones the traffic itself
 * uses (found by a first, clean round); each then fails while messages keep
 * coming: once with a busy database (retried inside the store), then for a
 * while with a hard error (SQLITE_FULL on SQLite, a connection reset on
 * PostgreSQL). Per site: every acknowledged message is answered, exactly
 * once; every injected hard failure is counted in /metrics
 * (switchboard_store_failures_total{op}). Last, a turn whose commit keeps
 * failing past INBOUND_TTL gets the notice in its chat.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FaultPlan, type FaultKind } from "../support/faults.js";
import { freshDatabaseUrl, PROVIDERS } from "../support/db.js";
import { parsePrometheus } from "../support/prometheus.js";
import { boot, report, RetryingAdapter, tally, until, type Booted } from "./helpers.js";

let booted: Booted | undefined;
afterEach(async () => {
  await booted?.app.stop().catch(() => undefined);
  booted = undefined;
});

async function failuresByOp(url: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const s of parsePrometheus(await (await fetch(`${url}/metrics`)).text())) {
    if (s.name === "switchboard_store_failures_total") out.set(s.labels.op!, (out.get(s.labels.op!) ?? 0) + s.value);
  }
  return out;
}

/** One round of traffic: DMs in 4 chats, a group with mentions, and a /new; resolves with the echo texts acknowledged. */
async function round(adapter: RetryingAdapter, tag: string): Promise<{ expected: string[]; acked: number }> {
  const expected: string[] = [];
  const sends: Array<Promise<unknown>> = [];
  let acked = 0;
  const send = (env: Parameters<RetryingAdapter["deliver"]>[0], echo: boolean) =>
    sends.push(
      adapter.deliver(env).then((r) => {
        if (r.status === "accepted" || r.status === "duplicate") acked++;
        if (echo) expected.push(`echo: ${env.text}`);
      }),
    );
  for (let i = 0; i < 3; i++) {
    for (let c = 0; c < 4; c++) send(adapter.dm(`${tag}-u${c}`, `${tag} dm${c} #${i}`), true);
    send(adapter.group(`${tag}-g`, `${tag}-m${i}`, `@membot ${tag} group #${i}`, { mentioned: true }), true);
  }
  send(adapter.dm(`${tag}-u0`, "/new"), false);
  await Promise.all(sends);
  return { expected, acked };
}

async function settled(b: Booted, adapter: RetryingAdapter, expected: string[], what: string): Promise<ReturnType<typeof tally>> {
  // Not answered in time is reported (as lost) by the caller, with the site's other counts.
  await until(
    () =>
      tally(
        expected,
        adapter.sent.map((s) => s.text),
      ).missing.length === 0,
    30_000,
    what,
  );
  await b.app.gateway.idle();
  // Causal: nothing is left unsent in the database, and nothing queued in memory.
  await until(
    async () => {
      const rows = await b.app.db.query(
        "test-pending",
        b.app.db.q
          .selectFrom("OutboundDelivery")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("status", "in", ["pending", "sending"]),
      );
      return Number(rows[0]!.n) === 0;
    },
    60_000,
    `${what}: every reply out`,
  );
  return tally(
    expected,
    adapter.sent.map((s) => s.text),
  );
}

const VARIANTS = [...PROVIDERS.map((p) => [p, p, {}] as const), ["postgresql, shared database (leases)", "postgresql", { SHARED_DATABASE: "true" }] as const];

describe.each(VARIANTS)("store faults at every call site during traffic on %s", (name, provider, env: Record<string, string>) => {
  const busy: FaultKind = provider === "sqlite" ? "SQLITE_BUSY" : "ECONNRESET";
  const hard: FaultKind = provider === "sqlite" ? "SQLITE_FULL" : "ECONNRESET";

  it("0 acknowledged messages lost, 0 duplicates, every failure counted", async () => {
    const faults = new FaultPlan();
    const adapter = new RetryingAdapter("901");
    booted = await boot(await freshDatabaseUrl(provider), [adapter], env, { faults, storeProbeMs: 60_000 });
    const b = booted;

    // A clean round finds the call sites the traffic uses.
    faults.calls.clear();
    const clean = await round(adapter, "clean");
    const t0 = await settled(b, adapter, clean.expected, "the clean round");
    expect(t0.duplicates).toEqual([]);
    const sites = [...faults.calls.keys()].filter((op) => !op.startsWith("test-")).sort();
    console.log(`[store-faults ${name}] call sites on the traffic path (${sites.length}): ${sites.join(", ")}`);
    expect(sites.length).toBeGreaterThan(8);

    const rows: string[] = [];
    let lost = 0;
    let duplicates = 0;
    let uncounted = 0;
    for (const site of sites) {
      const before = await failuresByOp(b.url);
      const injectedBefore = faults.injected.get(site) ?? 0;
      const retriesBefore = adapter.inboundFailures;
      adapter.sent.length = 0;
      faults.once(site, busy).for(site, 400, hard);
      const r = await round(adapter, site);
      const t = await settled(b, adapter, r.expected, `site ${site}`);
      faults.clear();
      const injected = (faults.injected.get(site) ?? 0) - injectedBefore;
      const counted = ((await failuresByOp(b.url)).get(site) ?? 0) - (before.get(site) ?? 0);
      // The busy fault is retried inside the store (not a failure); each hard one fails its call once.
      const hardInjected = busy === hard ? injected : Math.max(0, injected - 1);
      lost += t.missing.length;
      duplicates += t.duplicates.length;
      if (counted !== hardInjected) uncounted++;
      rows.push(
        `${site.padEnd(22)} injected ${String(injected).padStart(3)}  counted ${String(counted).padStart(3)}  acked ${r.acked}  answered ${t.answered}/${r.expected.length}  lost ${t.missing.length}  duplicates ${t.duplicates.length}  adapter retries ${adapter.inboundFailures - retriesBefore}`,
      );
    }
    console.log(`[store-faults ${name}]\n${rows.join("\n")}`);
    report(`store-faults-${name}`, { sites: sites.length, lost, duplicates, uncounted });
    expect({ lost, duplicates, uncounted }).toEqual({ lost: 0, duplicates: 0, uncounted: 0 });
  });

  it("a turn whose commit keeps failing past INBOUND_TTL gets the notice in its chat, once", async () => {
    const faults = new FaultPlan();
    const adapter = new RetryingAdapter("902");
    booted = await boot(await freshDatabaseUrl(provider), [adapter], { ...env, INBOUND_TTL: "2s" }, { faults, storeProbeMs: 60_000 });
    faults.for("commit-turn", 60_000, hard);
    const envs = [adapter.dm("t1", "one"), adapter.dm("t2", "two"), adapter.dm("t1", "three")];
    for (const e of envs) expect((await adapter.deliver(e)).status).toBe("accepted");
    await until(() => adapter.sent.length >= envs.length, 30_000, "the notices");
    await booted.app.gateway.idle();
    const notices = adapter.sent.filter((s) => s.text.startsWith("I couldn't answer your message from "));
    const unanswered = parsePrometheus(await (await fetch(`${booted.url}/metrics`)).text()).find((s) => s.name === "switchboard_unanswered_total")?.value ?? 0;
    report(`ttl-notice-${name}`, {
      sent: envs.length,
      notices: notices.length,
      echoes: adapter.sent.filter((s) => s.text.startsWith("echo:")).length,
      unanswered,
    });
    expect(notices.map((n) => n.chatId).sort()).toEqual(["t1", "t1", "t2"]);
    expect(adapter.sent).toHaveLength(3);
    expect(unanswered).toBe(3);
  });
});

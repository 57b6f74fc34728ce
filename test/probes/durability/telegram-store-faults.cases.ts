/**
 * A store fault at every call site one Telegram message takes, through the
 * real grammY adapter (long polling) against FakeTelegram, on a real SQLite
 * file. Per site: the site's next call fails once with the driver's own
 * "disk full" error, one message goes through, and then the message is
 * answered exactly once (after the poller's retry or the gateway's), the
 * failure is counted in /metrics (switchboard_store_failures_total{op}) and
 * a warning or error is logged for it.
 *
 * Run on each provider by telegram-store-faults.test.ts and telegram-store-faults.pg.test.ts.
 */
import { afterEach, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import { loadConfig } from "../../../src/config.js";
import { createApp, type App } from "../../../src/gateway/app.js";
import { FakeTelegram } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { freshDatabaseUrl, freshMigratedSqliteUrl, type TestProvider } from "../../support/db.js";
import { FaultPlan } from "../../support/faults.js";
import { parsePrometheus } from "../../support/prometheus.js";
import { capturedLogger } from "../../reliability/helpers.js";

let app: App | undefined;
let fake: FakeTelegram | undefined;

async function failuresByOp(base: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const s of parsePrometheus(await (await fetch(`${base}/metrics`)).text())) {
    if (s.name === "switchboard_store_failures_total") out.set(s.labels.op!, (out.get(s.labels.op!) ?? 0) + s.value);
  }
  return out;
}

/** The probe, on each provider (telegram-store-faults.test.ts, telegram-store-faults.pg.test.ts). */
export function telegramStoreFaultCases(provider: TestProvider): void {
  afterEach(async () => {
    await app?.stop().catch(() => undefined);
    app = undefined;
    await fake?.close();
    fake = undefined;
  });

  it("each message is answered exactly once, each failure is counted and logged", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const faults = new FaultPlan();
    const lines: string[] = [];
    const config = loadConfig({
      DATABASE_URL: provider === "sqlite" ? await freshMigratedSqliteUrl() : await freshDatabaseUrl(provider),
      HTTP_PORT: "0",
      LOG_LEVEL: "info",
      DM_POLICY: "open",
      REFLECT_EVERY_TURNS: "0",
    });
    const adapter = new TelegramAdapter({
      token: fake.token,
      apiRoot: fake.apiRoot,
      mode: "polling",
      pollingTimeoutSec: 1,
      backoff: { baseMs: 20, maxMs: 200 },
    });
    app = await createApp(config, { log: capturedLogger(lines, "info"), adapters: () => [adapter], faults, retryIntervalMs: 200 });
    const base = await app.start();
    const f = fake;

    const send = async (tag: string) => {
      const user = f.user(tag);
      const chat = f.privateChat(user);
      f.userMessage({ chat, from: user, text: tag });
      await eventually(
        () => f.sent({ chatId: chat.id }).length,
        (n) => n >= 1,
        30_000,
        `the reply to ${tag}`,
      );
    };

    // A second clean message (in a chat of its own) finds the call sites every new chat's message takes.
    const marked = async (n: number) => {
      await eventually(
        () => faults.calls.get("mark-sent") ?? 0,
        (c) => c >= n,
        30_000,
        "the clean reply marked sent",
      );
      await app!.gateway.idle();
    };
    await send("clean");
    await marked(1);
    const first = new Map(faults.calls);
    await send("clean-2");
    await marked(2);
    const sites = [...faults.calls]
      .filter(([op, n]) => n > (first.get(op) ?? 0))
      .map(([op]) => op)
      .filter(
        (op) => !op.startsWith("test-") && !/^(lease|wal|prune|budget-sweep|job-due|runs-sending|unsent|approval-orphans|sessions-for-review|waiting)/.test(op),
      )
      .sort();
    console.log(`[durability] a Telegram message's call sites (${sites.length}): ${sites.join(", ")}`);
    expect(sites).toEqual(expect.arrayContaining(["record-inbound", "commit-turn", "mark-sending", "mark-sent"]));

    const rows: string[] = [];
    const bad: string[] = [];
    for (const site of sites) {
      const before = (await failuresByOp(base)).get(site) ?? 0;
      const injectedBefore = faults.injected.get(site) ?? 0;
      const logsBefore = lines.length;
      faults.once(site, provider === "sqlite" ? "SQLITE_FULL" : "ECONNRESET");
      await send(`m-${site}`);
      // The fault fired (the message's own call, or a background one of the same site).
      await eventually(
        () => (faults.injected.get(site) ?? 0) - injectedBefore,
        (n) => n >= 1,
        30_000,
        `the fault at ${site}`,
      );
      await app.gateway.idle();
      const counted = ((await failuresByOp(base)).get(site) ?? 0) - before;
      const logged = lines.slice(logsBefore).filter((l) => {
        const o = JSON.parse(l) as { level: string };
        return (o.level === "warn" || o.level === "error") && /disk is full|SQLITE_FULL|SqliteError|ECONNRESET|Unavailable|StoreError/.test(l);
      });
      rows.push(`${site.padEnd(32)} counted ${counted}  logged ${logged.length}`);
      if (counted !== 1) bad.push(`${site}: counted ${counted}`);
      if (logged.length === 0) bad.push(`${site}: not logged`);
    }
    console.log(`[durability]\n${rows.join("\n")}`);

    // Everything still queued goes out before a graceful stop returns: a duplicate would be in the fake now.
    await app.stop({ graceMs: 30_000 });
    app = undefined;
    const per = new Map<string, number>();
    for (const s of f.sent()) per.set(s.text, (per.get(s.text) ?? 0) + 1);
    const expected = ["clean", "clean-2", ...sites.map((s) => `m-${s}`)].map((t) => `echo: ${t}`);
    expect({
      missing: expected.filter((t) => !per.has(t)),
      duplicates: [...per].filter(([, n]) => n > 1).map(([t]) => t),
      bad,
    }).toEqual({ missing: [], duplicates: [], bad: [] });
  }, 180_000);
}

/**
 * A store fault at each call site of a restart's recovery (the unsent
 * replies, the unhandled events, the approvals a previous run left), on the
 * same SQLite file, through the real grammY adapter against FakeTelegram.
 * The first run is stopped while a turn runs (abandoned: its event stays
 * unhandled, DESIGN "Durability", Stopping). Per site, the second start has
 * that site's next call fail once: the gateway still starts, and the
 * abandoned message is answered exactly once, without a third start.
 */
import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { Agent } from "../../../src/agent/types.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeTelegram } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { startAppOn } from "../../support/app-on.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";
import { FaultPlan } from "../../support/faults.js";

let fake: FakeTelegram | undefined;
const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
  await fake?.close();
  fake = undefined;
});

describe("a store fault while a restart recovers", () => {
  // A single failed read of the recovery ("unsent": Outbound.queueUnsent, "unhandled-inbound": replayUnhandled)
  // rejected Gateway.start(), so one transient store error at boot (a busy lock past its retries, a PostgreSQL
  // failover) kept the gateway down. They are retried with backoff now (start-reads.ts), the door held meanwhile.
  for (const site of ["unsent", "unhandled-inbound", "approval-orphans"]) {
    const probe = it;
    probe(
      `at ${site}: the gateway starts, and the message the stop abandoned is answered exactly once`,
      async () => {
        fake = new FakeTelegram();
        await fake.start();
        const url = await freshMigratedSqliteUrl();
        let hold = true;
        let running = 0;
        const agentFactory = (): Agent => ({
          name: "held",
          async *run(req) {
            const last = [...req.messages].reverse().find((m) => m.role === "user")?.content ?? "";
            if (hold) {
              running++;
              await new Promise<void>((_, reject) => {
                if (req.signal?.aborted) return reject(req.signal.reason);
                req.signal?.addEventListener("abort", () => reject(req.signal!.reason), { once: true });
              });
            }
            yield { type: "done", text: `echo: ${last}`, toolRounds: 0 };
          },
        });
        const start = async (faults?: FaultPlan) => {
          const adapter = new TelegramAdapter({ token: fake!.token, apiRoot: fake!.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
          const { app } = await startAppOn(
            url,
            [adapter],
            { REFLECT_EVERY_TURNS: "0" },
            { agentFactory: agentFactory as never, retryIntervalMs: 200, ...(faults && { faults }) },
          );
          apps.push(app);
          return app;
        };
        const first = await start();
        const user = fake.user(`r-${site}`);
        const chat = fake.privateChat(user);
        fake.userMessage({ chat, from: user, text: "abandoned" });
        await eventually(
          () => running,
          (n) => n >= 1,
          20_000,
          "the turn running",
        );
        await first.stop({ graceMs: 50 });
        apps.length = 0;
        hold = false;
        const faults = new FaultPlan().once(site, "SQLITE_FULL");
        let started: App | undefined;
        let startError: unknown;
        try {
          started = await start(faults);
        } catch (err) {
          startError = err;
        }
        expect(startError).toBeUndefined();
        expect(faults.injected.get(site)).toBe(1);
        await eventually(
          () => fake!.sent({ chatId: chat.id }).length,
          (n) => n >= 1,
          20_000,
          "the answer after the restart",
        );
        await started!.stop({ graceMs: 30_000 });
        apps.length = 0;
        expect(fake.sent({ chatId: chat.id }).map((s) => s.text)).toEqual(["echo: abandoned"]);
      },
      60_000,
    );
  }
});

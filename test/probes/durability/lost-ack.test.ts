/**
 * A lost commit acknowledgement at each call site of a Telegram message's
 * path: the write landed, but the caller is told the commit's outcome is
 * unknown (StoreError CommitUnknown, the `afterCommit` seam of
 * DatabaseOptions.faults). Real grammY adapter (long polling) against
 * FakeTelegram, real SQLite file. Per site, one message in a chat of its
 * own: it is answered exactly once, without a restart (a recorded event
 * whose acknowledgement was lost must not wait for the next start's replay).
 */
import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import { loadConfig } from "../../../src/config.js";
import { createApp, type App } from "../../../src/gateway/app.js";
import { silentLogger } from "../../../src/log.js";
import type { StoreFaults } from "../../../src/store/index.js";
import { FakeTelegram } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";

let app: App | undefined;
let fake: FakeTelegram | undefined;
afterEach(async () => {
  await app?.stop().catch(() => undefined);
  app = undefined;
  await fake?.close();
  fake = undefined;
});

/** Loses the acknowledgement of the next commit of one op; counts every commit per op. */
class LostAcks implements StoreFaults {
  readonly commits = new Map<string, number>();
  readonly lost = new Map<string, number>();
  #armed: string | undefined;
  arm(op: string): void {
    this.#armed = op;
  }
  afterCommit = (op: string): void => {
    this.commits.set(op, (this.commits.get(op) ?? 0) + 1);
    if (this.#armed !== op) return;
    this.#armed = undefined;
    this.lost.set(op, (this.lost.get(op) ?? 0) + 1);
    throw new Error(`the acknowledgement of "${op}" was lost (injected)`);
  };
}

describe("a lost commit acknowledgement at each call site of a Telegram message's path", () => {
  it("each message is answered exactly once, without a restart", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const faults = new LostAcks();
    const config = loadConfig({
      DATABASE_URL: await freshMigratedSqliteUrl(),
      HTTP_PORT: "0",
      LOG_LEVEL: "silent",
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
    app = await createApp(config, { log: silentLogger, adapters: () => [adapter], faults, retryIntervalMs: 200 });
    await app.start();
    const f = fake;
    const a = app;
    const send = async (tag: string, timeoutMs = 20_000): Promise<boolean> => {
      const user = f.user(tag);
      const chat = f.privateChat(user);
      f.userMessage({ chat, from: user, text: tag });
      try {
        await eventually(
          () => f.sent({ chatId: chat.id }).length,
          (n) => n >= 1,
          timeoutMs,
          `the reply to ${tag}`,
        );
        return true;
      } catch {
        return false;
      }
    };
    const committed = async (op: string, n: number) => {
      await eventually(
        () => faults.commits.get(op) ?? 0,
        (c) => c >= n,
        20_000,
        `${op} committed`,
      );
      await a.gateway.idle();
    };

    await send("clean");
    await committed("mark-sent", 1);
    const first = new Map(faults.commits);
    await send("clean-2");
    await committed("mark-sent", 2);
    const sites = [...faults.commits]
      .filter(([op, n]) => n > (first.get(op) ?? 0))
      .map(([op]) => op)
      .filter((op) => !/^(lease|wal|prune|budget-sweep|job-due|runs-sending|unsent)/.test(op))
      .sort();
    console.log(`[durability] commits on a Telegram message's path (${sites.length}): ${sites.join(", ")}`);
    expect(sites).toEqual(expect.arrayContaining(["record-inbound", "commit-turn"]));

    const unanswered: string[] = [];
    const took: string[] = [];
    for (const site of sites) {
      faults.arm(site);
      const t0 = Date.now();
      if (!(await send(`m-${site}`))) unanswered.push(site);
      took.push(`${site} ${Date.now() - t0} ms`);
      await a.gateway.idle();
    }
    console.log(`[durability] answered after a lost acknowledgement: ${took.join(", ")}`);
    await app.stop({ graceMs: 30_000 });
    app = undefined;
    const per = new Map<string, number>();
    for (const s of f.sent()) per.set(s.text, (per.get(s.text) ?? 0) + 1);
    expect({
      lost: sites.filter((s) => !faults.lost.get(s)),
      unanswered,
      duplicates: [...per].filter(([, n]) => n > 1).map(([t]) => t),
    }).toEqual({ lost: [], unanswered: [], duplicates: [] });
  }, 300_000);
});

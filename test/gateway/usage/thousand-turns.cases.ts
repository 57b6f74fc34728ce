/**
 * Acceptance 3 of issue 29: 1,000 turns (streamed and whole answers, the
 * fake model reporting usage chosen per request) leave usage rows equal to
 * the reported usage exactly, and `switchboard usage --json` (the real CLI,
 * spawned) totals what the rows hold.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, expect, it } from "vitest";
import type { App } from "../../../src/gateway/app.js";
import { UsageStore } from "../../../src/store/index.js";
import { FakeOpenAi } from "../../fakes/openai.js";
import { eventually, startApp } from "../../support/app.js";
import type { TestProvider } from "../../support/db.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";
import { streamed, type Tokens, whole } from "./model-usage.js";

const TURNS = 1000;
const USERS = 40;

export function thousandTurnCases(provider: TestProvider): void {
  let app: App | undefined;
  let fake: FakeOpenAi | undefined;
  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    app = fake = undefined;
  });

  it(`${provider}: ${TURNS} turns, every row the usage the model reported; switchboard usage --json totals the rows`, { timeout: 240_000 }, async () => {
    fake = await FakeOpenAi.start();
    const reported: Tokens[] = [];
    // Each request's usage is chosen from its own message (n), so what was reported is known exactly.
    fake.responder = (body) => {
      const text: string = body.messages.at(-1).content;
      const n = Number(/turn (\d+)/.exec(text)?.[1]);
      const tokens = { prompt: 100 + n, completion: 1 + (n % 97), cached: n % 13 };
      reported.push(tokens);
      return n % 2 === 0 ? streamed(`answer ${n}`, tokens) : whole(`answer ${n}`, tokens);
    };
    const adapter = new MemoryAdapter();
    const s = await startApp(provider, [adapter], {
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_MODEL: "small-1",
      OPENAI_API_KEY: "sk-thousand",
      REFLECT_EVERY_TURNS: "0",
      CONTEXT_MAX_MESSAGES: "4",
    });
    app = s.app;
    const perUser = TURNS / USERS;
    await Promise.all(
      Array.from({ length: USERS }, async (_, u) => {
        for (let k = 0; k < perUser; k++) {
          const n = u * perUser + k;
          expect((await adapter.ctx.inbound(adapter.dm(String(1000 + u), `turn ${n}`))).status).toBe("accepted");
          await eventually(
            () => adapter.to(String(1000 + u)).length,
            (c) => c > k,
            60_000,
            `the answer to turn ${n}`,
          );
        }
      }),
    );
    const rows = await new UsageStore(app.db).recent(TURNS + 10);
    expect(rows).toHaveLength(TURNS);
    expect(rows.every((r) => !r.estimated && r.kind === "turn" && r.model === "small-1")).toBe(true);
    const key = (t: { prompt: number; completion: number; cached: number }) => `${t.prompt}/${t.completion}/${t.cached}`;
    expect(rows.map((r) => key({ prompt: r.promptTokens, completion: r.completionTokens, cached: r.cachedTokens })).sort()).toEqual(
      reported.map((t) => key({ ...t, cached: t.cached ?? 0 })).sort(),
    );
    const sum = (f: (t: Tokens) => number) => reported.reduce((a, t) => a + f(t), 0);

    const { stdout } = await promisify(execFile)(process.execPath, [path.resolve("bin/switchboard.mjs"), "usage", "--by", "user", "--since", "1d", "--json"], {
      env: { ...process.env, DATABASE_URL: s.config.DATABASE_URL, LOG_LEVEL: "silent" },
    });
    const doc = JSON.parse(stdout);
    expect(doc.total).toMatchObject({
      calls: TURNS,
      promptTokens: sum((t) => t.prompt),
      completionTokens: sum((t) => t.completion),
      cachedTokens: sum((t) => t.cached ?? 0),
      estimated: 0,
    });
    expect(doc.rows).toHaveLength(USERS);
    expect(doc.rows.every((r: { calls: number }) => r.calls === perUser)).toBe(true);
    console.log(`[usage ${provider}] ${TURNS} turns: ${rows.length} rows, prompt ${doc.total.promptTokens}, completion ${doc.total.completionTokens}`);
  });
}

/**
 * Probe: "Prices ... `perMinute` for transcription" (README, Usage and
 * budgets). A voice note's transcription is billed by the provider per
 * minute of audio; its usage row (and so every cost budget) must carry that
 * cost. Telegram reports the voice note's duration; a 120-second note at
 * 0.006 a minute costs 12,000 micro-units. Telegram through grammY against
 * the fake, the fake model and transcription endpoint over loopback, SQLite.
 */
import { afterEach, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import { parseAgentsConfig } from "../../../src/config/agents.js";
import { UsageStore } from "../../../src/store/index.js";
import { FakeOpenAi, textReply } from "../../fakes/openai.js";
import { FakeTelegram } from "../../fakes/telegram.js";
import { eventually, startApp } from "../../support/app.js";

const OGG = Buffer.concat([Buffer.from("OggS\0\x02", "binary"), Buffer.alloc(300, 1)]);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

it("a voice note's transcription is charged at the transcription model's perMinute price for its duration", async () => {
  const model = await FakeOpenAi.start();
  cleanups.push(() => model.close());
  model.responder = () => textReply(["noted"]);
  model.transcripts.push("buy milk");
  const tg = new FakeTelegram();
  await tg.start();
  cleanups.push(() => tg.close());
  const alice = tg.user("Alice");
  const agentsConfig = parseAgentsConfig(
    JSON.stringify({
      agents: { default: { baseUrl: model.baseUrl, apiKeyEnv: "PROBE_KEY", model: "chat-1", transcribeModel: "whisper-1" } },
      prices: { "chat-1": { input: 0, output: 0 }, "whisper-1": { input: 0, output: 0, perMinute: 0.006 } },
      budgets: [{ per: "user", period: "day", cost: 1 }],
    }),
    { PROBE_KEY: "sk-probe" },
    {},
  );
  const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
  const { app } = await startApp("sqlite", [adapter], { REFLECT_EVERY_TURNS: "0" }, { agentsConfig });
  cleanups.push(() => app.stop());
  const dm = tg.privateChat(alice);
  tg.voice({ chat: dm, from: alice, data: OGG, duration: 120 });
  await eventually(
    () => tg.sent({ chatId: dm.id }),
    (m) => m.length >= 1,
    15_000,
    "the answer",
  );
  expect(model.transcriptions).toHaveLength(1);
  const usage = new UsageStore(app.db);
  const rows = await eventually(
    () => usage.recent(10),
    (r) => r.some((x) => x.kind === "transcription") && r.some((x) => x.kind === "turn"),
    10_000,
    "the rows",
  );
  const transcription = rows.find((r) => r.kind === "transcription")!;
  expect(transcription).toMatchObject({ model: "whisper-1", priced: true });
  expect(transcription.costMicros).toBe(12_000);
});

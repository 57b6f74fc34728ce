/**
 * An agent's own vision, transcription and context limits (AGENTS_CONFIG
 * `vision`, `transcribeModel`, `contextMaxMessages`), where the runtime reads
 * those settings: the routed agent sees images and hears voice notes on its
 * own endpoint with its own key while the gateway's defaults (MODEL_VISION
 * off, no TRANSCRIBE_MODEL) stay as they are for everyone else. Telegram
 * through grammY against the fake, the fake model endpoints over loopback.
 */
import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import { parseAgentsConfig } from "../../src/config/agents.js";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually, startApp } from "../support/app.js";
import { unmarked } from "../support/notices.js";

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]), Buffer.alloc(200, 7)]);
const OGG = Buffer.concat([Buffer.from("OggS\0\x02", "binary"), Buffer.alloc(300, 1)]);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Msg = { role: string; content: unknown };

describe("an agent's own media settings and context limits", () => {
  it("the routed agent sees images, transcribes on its endpoint and keeps its own window; the default agent does neither", async () => {
    const seer = await FakeOpenAi.start();
    cleanups.push(() => seer.close());
    seer.responder = () => textReply(["seen"]);
    seer.transcripts.push("buy milk");
    const tg = new FakeTelegram();
    await tg.start();
    cleanups.push(() => tg.close());
    const alice = tg.user("Alice");
    const bob = tg.user("Bob");
    const agentsConfig = parseAgentsConfig(
      JSON.stringify({
        agents: {
          seer: { baseUrl: seer.baseUrl, apiKeyEnv: "SEER_KEY", model: "seer-1", vision: true, transcribeModel: "whisper-seer", contextMaxMessages: 2 },
        },
        routes: [{ match: { sender: String(alice.id) }, agent: "seer" }],
      }),
      { SEER_KEY: "sk-seer-key" },
      {},
    );
    const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
    const { app } = await startApp("sqlite", [adapter], {}, { agentsConfig });
    cleanups.push(() => app.stop());
    const dm = tg.privateChat(alice);
    const answers = (n: number) =>
      eventually(
        () => tg.sent({ chatId: dm.id }).map((m) => unmarked(m.text)),
        (t) => t.length >= n,
        15_000,
        `answer ${n}`,
      );

    tg.photo({ chat: dm, from: alice, caption: "what is this?", data: PNG });
    await answers(1);
    const parts = (seer.requests[0]!.body.messages as Msg[]).at(-1)!.content as Array<{ type: string }>;
    expect(parts.map((p) => p.type)).toEqual(["text", "image_url"]);

    tg.voice({ chat: dm, from: alice, data: OGG, duration: 2 });
    await answers(2);
    expect(seer.transcriptions).toHaveLength(1);
    expect([seer.transcriptions[0]!.model, seer.transcriptions[0]!.headers.authorization]).toEqual(["whisper-seer", "Bearer sk-seer-key"]);
    expect((seer.requests[1]!.body.messages as Msg[]).at(-1)!.content).toBe("[voice note, transcribed]: buy milk");

    tg.userMessage({ chat: dm, from: alice, text: "third" });
    await answers(3);
    // contextMaxMessages 2: the system prompt, the last two of the window, the message.
    const third = seer.requests[2]!.body.messages as Msg[];
    expect(third.filter((m) => m.role !== "system")).toHaveLength(3);

    // Bob has the default agent (echo): his photo is not looked at (MODEL_VISION is off), and nothing reaches the seer.
    const bobDm = tg.privateChat(bob);
    tg.photo({ chat: bobDm, from: bob, caption: "and this?", data: PNG });
    const bobs = await eventually(
      () => tg.sent({ chatId: bobDm.id }).map((m) => unmarked(m.text)),
      (t) => t.length >= 1,
      15_000,
      "bob's answer",
    );
    expect(bobs.join("\n")).toContain("echo: and this?");
    expect(seer.requests).toHaveLength(3);
  });
});

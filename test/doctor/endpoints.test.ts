/**
 * `switchboard doctor` sends each secret only to the host its variable names:
 * the lenient read leaves an invalid endpoint variable at its default, the
 * platform's public host, so a typo in OPENAI_BASE_URL would have sent
 * OPENAI_API_KEY to api.openai.com. In-process against the platform fakes and
 * the fake model server over loopback; every request the checks send is seen
 * through a spy on fetch that passes it on.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfigLenient } from "../../src/config.js";
import { runDoctor } from "../../src/doctor/index.js";
import { FakeDiscord } from "../fakes/discord.js";
import { FakeOpenAi } from "../fakes/openai.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { freshDatabaseUrl } from "../support/db.js";

const TG_TOKEN = "123456789:AAH-endpoint-telegram-token-1234567";
const DC_TOKEN = "MTIz.endpoint-discord-token.abcdefghijklmnop";
const SL_TOKEN = "xoxb-1111-2222-endpointslacktoken";
const SL_APP = "xapp-1-A0FAKEAPP-3333-endpointapptoken";
const AI_KEY = "sk-endpoint-model-key-0123456789";

describe("switchboard doctor: where secrets go", () => {
  let tg: FakeTelegram;
  let dc: FakeDiscord;
  let sl: FakeSlack;
  let ai: FakeOpenAi;
  let dbUrl: string;

  beforeAll(async () => {
    tg = new FakeTelegram({ token: TG_TOKEN });
    dc = new FakeDiscord({ token: DC_TOKEN });
    sl = new FakeSlack({ botToken: SL_TOKEN, appToken: SL_APP });
    await Promise.all([tg.start(), dc.start(), sl.start()]);
    ai = await FakeOpenAi.start();
    dbUrl = await freshDatabaseUrl("sqlite");
  });
  afterAll(async () => {
    await Promise.all([tg?.close(), dc?.close(), sl?.close(), ai?.close()]);
  });

  const base = () => ({
    DATABASE_URL: dbUrl,
    TELEGRAM_BOT_TOKEN: TG_TOKEN,
    TELEGRAM_API_ROOT: tg.apiRoot,
    DISCORD_BOT_TOKEN: DC_TOKEN,
    DISCORD_API_URL: dc.apiUrl,
    SLACK_BOT_TOKEN: SL_TOKEN,
    SLACK_APP_TOKEN: SL_APP,
    SLACK_API_URL: sl.apiUrl,
    OPENAI_BASE_URL: ai.baseUrl,
    OPENAI_API_KEY: AI_KEY,
    OPENAI_MODEL: "fake-model",
  });

  it("a secret goes only to the host its variable names; an invalid endpoint is an error, never a fallback to the default host", async () => {
    // Every request the checks send, with where it went and whether it carried a secret.
    const sent: Array<{ origin: string; secrets: string[] }> = [];
    const realFetch = globalThis.fetch;
    const spy = vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const carried = `${url.href} ${JSON.stringify(init?.headers ?? {})}`;
      sent.push({ origin: url.origin, secrets: [AI_KEY, TG_TOKEN, DC_TOKEN, SL_TOKEN, SL_APP].filter((k) => carried.includes(k)) });
      return realFetch(input, init);
    });
    try {
      const doctorWith = async (env: Record<string, string>) => {
        sent.length = 0;
        const { config, problems } = loadConfigLenient({ ...base(), ...env });
        return new Map((await runDoctor(config, {}, { timeoutMs: 5000, problems })).map((c) => [c.id, c]));
      };
      // Each endpoint with a typo the URL parser refuses (a missing colon, a trailing slash
      // Telegram's root must not have, ...): nothing with that secret is sent anywhere.
      const typos: Array<[string, string, string, string]> = [
        ["OPENAI_BASE_URL", ai.baseUrl.replace("http://", "http//"), AI_KEY, "model"],
        ["TELEGRAM_API_ROOT", `${tg.apiRoot}/`, TG_TOKEN, "telegram"],
        ["DISCORD_API_URL", dc.apiUrl.replace("http://", ""), DC_TOKEN, "discord"],
        ["SLACK_API_URL", sl.apiUrl.replace(/\/$/, ""), SL_TOKEN, "slack"],
      ];
      for (const [variable, value, secret, check] of typos) {
        const checks = await doctorWith({ [variable]: value });
        expect(
          sent.filter((r) => r.secrets.includes(secret)),
          `${variable}=${value}`,
        ).toEqual([]);
        expect(checks.get(check), variable).toMatchObject({
          status: "fail",
          detail: expect.stringContaining(variable),
          fix: expect.stringContaining(variable),
        });
        expect(checks.get("config")).toMatchObject({ status: "fail", detail: expect.stringContaining(variable) });
      }
      // Configured right, each secret goes to its own server and nowhere else.
      await doctorWith({});
      const own: Record<string, string> = {
        [AI_KEY]: new URL(ai.baseUrl).origin,
        [TG_TOKEN]: new URL(tg.apiRoot).origin,
        [DC_TOKEN]: new URL(dc.apiUrl).origin,
        [SL_TOKEN]: new URL(sl.apiUrl).origin,
        [SL_APP]: new URL(sl.apiUrl).origin,
      };
      expect(sent.some((r) => r.secrets.includes(AI_KEY))).toBe(true);
      for (const r of sent) for (const k of r.secrets) expect(r.origin).toBe(own[k]);
    } finally {
      spy.mockRestore();
    }
  });
});

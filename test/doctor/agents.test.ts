/**
 * `switchboard doctor` checks every agent of AGENTS_CONFIG (issue 29,
 * acceptance 6): each agent's endpoint and model, against two fake model
 * servers over loopback, each key sent only to its own agent's server and
 * never shown; an invalid file is one failed check with the gateway's line.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfigLenient } from "../../src/config.js";
import { runDoctor } from "../../src/doctor/index.js";
import { completionReply, FakeOpenAi, statusReply } from "../fakes/openai.js";
import { freshDatabaseUrl } from "../support/db.js";

const SUPPORT_KEY = "sk-doctor-support-0123456789abcdef";
const CODER_KEY = "sk-doctor-coder-0123456789abcdef";

describe("switchboard doctor: every agent", () => {
  let support: FakeOpenAi;
  let coder: FakeOpenAi;
  let dir: string;
  let dbUrl: string;

  beforeAll(async () => {
    [support, coder] = await Promise.all([FakeOpenAi.start(), FakeOpenAi.start()]);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "doctor-agents-"));
    dbUrl = await freshDatabaseUrl("sqlite");
  });
  afterAll(async () => {
    await Promise.all([support?.close(), coder?.close()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const doctor = async (file: unknown) => {
    const at = path.join(dir, `agents-${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(at, JSON.stringify(file));
    const { config, problems } = loadConfigLenient({ DATABASE_URL: dbUrl, AGENTS_CONFIG: at });
    const checks = await runDoctor(config, { SUPPORT_KEY, CODER_KEY }, { timeoutMs: 5000, problems });
    return new Map(checks.map((c) => [c.id, c]));
  };

  it("checks each agent's server and model with its own key; the default agent without an endpoint is skipped", async () => {
    support.models = ["small-1"];
    support.responder = () => completionReply("OK", "small-1");
    coder.models = ["other-model"];
    coder.responder = (body) =>
      body.model === "big-1" ? statusReply(404, {}, JSON.stringify({ error: { message: "The model big-1 does not exist" } })) : completionReply("OK");
    const checks = await doctor({
      agents: {
        support: { baseUrl: support.baseUrl, apiKeyEnv: "SUPPORT_KEY", model: "small-1" },
        coder: { baseUrl: coder.baseUrl, apiKeyEnv: "CODER_KEY", model: "big-1" },
      },
    });
    expect(checks.get("model")).toMatchObject({ status: "skip" });
    expect(checks.get("agent.support.list")).toMatchObject({ status: "pass", title: "Model server (agent support)" });
    expect(checks.get("agent.support.answer")).toMatchObject({ status: "pass" });
    expect(checks.get("agent.coder.list")).toMatchObject({ status: "warn", fix: expect.stringContaining("agent coder's model in AGENTS_CONFIG") });
    expect(checks.get("agent.coder.answer")).toMatchObject({ status: "fail", detail: expect.stringContaining("does not know the model big-1") });
    // Each key went to its own agent's server only.
    expect(support.requests.every((r) => r.headers.authorization === `Bearer ${SUPPORT_KEY}`)).toBe(true);
    expect(coder.requests.every((r) => r.headers.authorization === `Bearer ${CODER_KEY}`)).toBe(true);
    expect(coder.requests.length).toBeGreaterThan(0);
    const shown = JSON.stringify([...checks.values()]);
    expect(shown).not.toContain(SUPPORT_KEY);
    expect(shown).not.toContain(CODER_KEY);
  });

  it("a refused key names the agent's variable, never the key", async () => {
    support.responder = undefined;
    support.enqueue(statusReply(401, {}, JSON.stringify({ error: { message: `Incorrect API key provided: ${SUPPORT_KEY}.` } })));
    const checks = await doctor({ agents: { support: { baseUrl: support.baseUrl, apiKeyEnv: "SUPPORT_KEY", model: "small-1" } } });
    const c = checks.get("agent.support.answer")!;
    expect(c).toMatchObject({ status: "fail", fix: "Check the variable SUPPORT_KEY (agent support's apiKeyEnv): the server refused it." });
    expect(JSON.stringify(c)).not.toContain(SUPPORT_KEY);
  });

  it("an invalid file is one failed check with the line serve would stop with", async () => {
    const checks = await doctor({ agents: { support: { model: "m" } }, routes: [{ match: { chat: "x" }, agent: "coder" }] });
    expect(checks.get("agents")).toMatchObject({ status: "fail", detail: expect.stringContaining('route 1, field agent: no agent is named "coder"') });
  });
});

/**
 * The log as an operator sees it: a real `node bin/switchboard.mjs serve`,
 * its stderr parsed line by line. JSON when stderr is not a terminal (ISO
 * times, no key written twice), pino-pretty on a terminal or with
 * LOG_FORMAT=pretty; one line per handled message and per failed delivery,
 * never with the message's content; a ready line that names the adapters,
 * the agent, the model and the database without its password.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger, describeDatabase } from "../src/log.js";
import { FakeOpenAi, textReply } from "./fakes/openai.js";
import { FakeTelegram } from "./fakes/telegram.js";
import { freshDatabaseUrl } from "./support/db.js";

/** The keys of a JSON object text in the order written, duplicates kept (JSON.parse keeps only the last). */
function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === '"') {
      let j = i + 1;
      while (line[j] !== '"') j += line[j] === "\\" ? 2 : 1;
      if (depth === 1 && /^\s*:/.test(line.slice(j + 1))) keys.push(JSON.parse(line.slice(i, j + 1)) as string);
      i = j;
    } else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") depth--;
  }
  return keys;
}

class ServeProcess {
  readonly lines: string[] = [];
  #buffer = "";
  #waiters: Array<() => void> = [];
  readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      this.#buffer += chunk;
      const parts = this.#buffer.split("\n");
      this.#buffer = parts.pop()!;
      this.lines.push(...parts.filter((l) => l.length > 0));
      for (const w of this.#waiters.splice(0)) w();
    });
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  /** Waits for a line the predicate accepts (the cause, not a time window). */
  async line(pred: (l: string) => boolean, what: string, timeoutMs = 60_000): Promise<string> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.lines.find(pred);
      if (hit) return hit;
      if (Date.now() > until || this.child.exitCode !== null) throw new Error(`no log line for ${what}; got:\n${this.lines.join("\n")}`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 500).unref();
      });
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) this.child.kill("SIGTERM");
    await this.exited;
  }
}

function serve(env: Record<string, string>, opts: { tty?: boolean } = {}): ServeProcess {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(TELEGRAM|DISCORD|SLACK|OPENAI|LOG_|DATABASE_URL|HTTP_)/.test(k)));
  const fullEnv = { ...clean, HTTP_PORT: "0", REFLECT_EVERY_TURNS: "0", ...env };
  // `script` gives the child a real terminal: its stderr is a TTY, as in an operator's shell.
  const child = opts.tty
    ? spawn("script", ["-qfec", `${process.execPath} bin/switchboard.mjs serve 1>&2`, "/dev/null"], { env: fullEnv, stdio: ["pipe", "pipe", "pipe"] })
    : spawn(process.execPath, ["bin/switchboard.mjs", "serve"], { env: fullEnv, stdio: ["ignore", "ignore", "pipe"] });
  if (opts.tty) child.stdout!.on("data", (c: Buffer) => child.stderr!.emit("data", c.toString("utf8")));
  return new ServeProcess(child);
}

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => undefined);
  cleanup = [];
});

describe("the log of a real serve process", () => {
  it("is JSON off a terminal: ISO times, no key twice, a ready line naming everything, one line per handled message and failed delivery, no content", async () => {
    const tg = new FakeTelegram({ token: "424242:log-test-telegram-token" });
    await tg.start();
    const ai = await FakeOpenAi.start();
    cleanup.push(
      () => tg.close(),
      () => ai.close(),
    );
    const pg = new URL(await freshDatabaseUrl("postgresql"));
    pg.password = "pw-s3cret-in-url";
    const proc = serve({
      DATABASE_URL: pg.toString(),
      DM_POLICY: "open",
      LOG_LEVEL: "info",
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      OPENAI_BASE_URL: ai.baseUrl,
      OPENAI_MODEL: "fake-model",
    });
    cleanup.push(() => proc.stop());

    const ready = JSON.parse(await proc.line((l) => l.includes("switchboard ready"), "the ready line"));
    expect(ready).toMatchObject({ level: "info", agent: "openai", model: "fake-model", modelUrl: ai.baseUrl, provider: "postgresql" });
    expect(ready.adapters).toEqual(expect.arrayContaining(["console:console", "telegram:424242"]));
    expect(ready.database).toBe(`postgresql://postgres:[redacted]@${pg.host}${pg.pathname}`);
    expect(ready.msg).toContain("agent openai, model fake-model;");
    expect(ready.msg).toMatch(
      /^switchboard ready on http:\/\/127\.0\.0\.1:\d+ \(adapters [^;]*telegram:424242[^;]*; agent openai, model fake-model; database postgresql:\/\/postgres:\[redacted\]@[^)]+\)$/,
    );

    // A private message answered by the model, then one whose reply Telegram refuses.
    const alice = tg.user("Alice");
    ai.enqueue(textReply(["the secret answer text"]));
    tg.userMessage({ chat: tg.privateChat(alice), from: alice, text: "confidential question one" });
    const handled = JSON.parse(await proc.line((l) => l.includes('"message handled"') && l.includes('"telegram"'), "the handled line"));
    expect(handled).toMatchObject({ level: "info", platform: "telegram", chatKind: "private", outcome: "answered" });
    expect(handled.latencyMs).toEqual(expect.any(Number));
    await tg.waitForCall("sendMessage", (c) => String(c.params.text).includes("the secret answer text"), 30_000);

    tg.failNext("sendMessage", { status: 403, description: "Forbidden: bot was blocked by the user" });
    ai.enqueue(textReply(["a reply nobody gets"]));
    tg.userMessage({ chat: tg.privateChat(alice), from: alice, text: "confidential question two" });
    const failed = JSON.parse(await proc.line((l) => l.includes("refused a reply"), "the failed-delivery line"));
    expect(failed).toMatchObject({ level: "error", platform: "telegram" });
    expect(failed.deliveryId).toEqual(expect.any(String));

    await proc.stop();
    expect(proc.lines.length).toBeGreaterThan(5);
    for (const line of proc.lines) {
      const obj = JSON.parse(line) as Record<string, unknown>;
      const keys = topLevelKeys(line);
      expect(keys.length, line).toBe(new Set(keys).size);
      expect(obj.time, line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      for (const content of ["confidential question", "the secret answer text", "a reply nobody gets", "pw-s3cret-in-url", tg.token])
        expect(line).not.toContain(content);
    }
    // Adapter lines carry their platform once: the gateway's context and the adapter's own binding do not repeat it.
    const started = proc.lines.find((l) => l.includes("telegram adapter started"))!;
    expect(topLevelKeys(started).filter((k) => k === "platform")).toEqual(["platform"]);
  });

  it("is pino-pretty on a terminal, and JSON there with LOG_FORMAT=json", async () => {
    const pretty = serve({ DATABASE_URL: await freshDatabaseUrl("sqlite") }, { tty: true });
    cleanup.push(() => pretty.stop());
    const line = await pretty.line((l) => l.includes("switchboard ready"), "the pretty ready line");
    expect(() => JSON.parse(line)).toThrow();
    // [2026-12-01 10:00:00.000] INFO: switchboard ready on http://… (adapters console:console; agent echo; database file:…)
    expect(line.replace(/\x1b\[[0-9;]*m/g, "")).toMatch(
      /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO: switchboard ready on http:\/\/127\.0\.0\.1:\d+ \(adapters console:console; agent echo; database file:/,
    );
    await pretty.stop();

    const json = serve({ DATABASE_URL: await freshDatabaseUrl("sqlite"), LOG_FORMAT: "json" }, { tty: true });
    cleanup.push(() => json.stop());
    const jl = await json.line((l) => l.includes("switchboard ready"), "the JSON ready line on a terminal");
    expect(JSON.parse(jl.trim())).toMatchObject({ level: "info", agent: "echo", model: null });
  });

  it("LOG_FORMAT=pretty is pretty off a terminal too; a bad LOG_FORMAT stops the start naming it", async () => {
    const proc = serve({ DATABASE_URL: await freshDatabaseUrl("sqlite"), LOG_FORMAT: "pretty" });
    cleanup.push(() => proc.stop());
    const line = await proc.line((l) => l.includes("switchboard ready"), "the pretty ready line");
    expect(line).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO: switchboard ready/);
    expect(line).not.toContain("\x1b[");
    await proc.stop();

    const bad = serve({ DATABASE_URL: await freshDatabaseUrl("sqlite"), LOG_FORMAT: "yaml" });
    expect(await bad.exited).toBe(1);
    expect(bad.lines).toEqual([expect.stringMatching(/^LOG_FORMAT must be json or pretty/)]);
  });
});

describe("logger pieces", () => {
  it("a child never repeats a key its parent binds to the same value; a new value is kept", () => {
    const out: string[] = [];
    const dest = new Writable({ write: (c, _e, cb) => (out.push(String(c)), cb()) });
    const log = createLogger({ destination: dest, format: "json" });
    log.child({ platform: "slack" }).child({ platform: "slack", botId: "B1" }).info({ x: 1 }, "hello");
    const keys = topLevelKeys(out[0]!);
    expect(keys.filter((k) => k === "platform")).toEqual(["platform"]);
    expect(JSON.parse(out[0]!)).toMatchObject({ platform: "slack", botId: "B1", x: 1 });
  });

  it("describeDatabase hides a password, and any query parameter that looks like one", () => {
    expect(describeDatabase("postgresql://sb:hunter22@db.internal:5432/switchboard?sslmode=require")).toBe(
      "postgresql://sb:[redacted]@db.internal:5432/switchboard?sslmode=require",
    );
    expect(describeDatabase("postgres://db/x?password=abc&application_name=sb")).toBe("postgres://db/x?password=[redacted]&application_name=sb");
    expect(describeDatabase("postgresql://sb@db/x")).toBe("postgresql://sb@db/x");
    expect(describeDatabase("file:./data/switchboard.db")).toBe("file:./data/switchboard.db");
  });
});

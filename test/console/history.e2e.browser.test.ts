/**
 * The console's history tried as a new user would (issue 26, item 14): what
 * the chat showed is what a reload and a restart on the same database show,
 * each message once. A proactive message (an API send) is written to the
 * transcript before it is delivered; an answer cut by /stop is kept, marked.
 */
import type { Browser, Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { launchChromium } from "../support/chromium.js";
import { eventually, startConsoleApp, type ConsoleApp } from "./app.js";

const SEND = "s".repeat(40);
const API = { API_TOKENS: `ci:send+read:${SEND}` };

let running: ConsoleApp | undefined;
let browser: Browser | undefined;
let model: FakeOpenAi | undefined;

afterEach(async () => {
  await browser?.close();
  browser = undefined;
  await running?.stop();
  running = undefined;
  await model?.close();
  model = undefined;
});

/** A fresh page on the console (Alice's private chat), its streams open; `problems` collects page errors and failed requests. */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  browser ??= await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1400, height: 950 } });
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} for ${r.url()}`);
  });
  await page.goto(running!.base);
  await page.locator('#console-stream[data-state="open"]').waitFor();
  await page.locator('#ops-stream[data-state="open"]').waitFor();
  return { page, problems };
}

/** The chat as the page shows it once its history is up: "from: text", "(stopped)" for an answer marked so. */
async function shown(page: Page): Promise<string[]> {
  await page.locator('#messages[aria-busy="false"]').waitFor();
  return page
    .locator("#messages > li")
    .evaluateAll((lis) =>
      lis.map(
        (li) =>
          `${li.getAttribute("data-from")}${li.getAttribute("data-stopped") === "true" ? " (stopped)" : ""}: ${li.querySelector(".text")!.textContent!.replace(/\s+/g, " ").trim()}`,
      ),
    );
}

async function say(page: Page, text: string, answer: string | RegExp): Promise<void> {
  await page.fill("#message-input", text);
  await page.press("#message-input", "Enter");
  await page.locator('#messages li[data-from="bot"] .text', { hasText: answer }).last().waitFor();
}

/** POST /api/v1/messages, mode send, into Alice's console chat. */
async function apiSend(key: string, text: string): Promise<void> {
  const r = await fetch(`${running!.base}/api/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${SEND}`, "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ conversation: { platform: "console", chat: "dm:alice" }, text }),
  });
  expect(r.status, await r.clone().text()).toBe(202);
}

/** Restarts the gateway on the same database; the open pages are closed first (their streams would break). */
async function restart(env: Record<string, string>): Promise<void> {
  for (const c of browser?.contexts() ?? []) await c.close();
  const dir = running!.dir;
  await running!.stop({ keepDatabase: true });
  running = undefined;
  running = await startConsoleApp(env, {}, { dir });
}

describe("console history across reloads and restarts", () => {
  it("a proactive message is shown once: live, after a reload, after a restart, and when sent after the restart", async () => {
    running = await startConsoleApp(API);
    const first = await openPage();
    await say(first.page, "hello", "echo: hello");
    await apiSend("k1", "first word from the API");
    await first.page.locator('#messages li[data-from="bot"] .text', { hasText: "first word from the API" }).waitFor();
    // The console stream is ordered: once the next answer is on the page, a second copy would have come before it.
    await say(first.page, "ping", "echo: ping");
    const before = ["user: hello", "bot: echo: hello", "bot: first word from the API", "user: ping", "bot: echo: ping"];
    expect(await shown(first.page)).toEqual(before);
    expect(await shown((await openPage()).page)).toEqual(before);

    await restart(API);
    const second = await openPage();
    expect(await shown(second.page)).toEqual(before);
    // Sent after the restart: its transcript row comes before the delivery this process's history holds.
    await apiSend("k2", "second word from the API");
    await second.page.locator('#messages li[data-from="bot"] .text', { hasText: "second word from the API" }).waitFor();
    const after = [...before, "bot: second word from the API"];
    const reloaded = await openPage();
    expect(await shown(reloaded.page)).toEqual(after);
    await say(reloaded.page, "pong", "echo: pong");
    expect(await shown((await openPage()).page)).toEqual([...after, "user: pong", "bot: echo: pong"]);
    expect([...first.problems, ...second.problems, ...reloaded.problems]).toEqual([]);
  });

  it("an answer cut by Stop stays in the history, once and marked, after a reload and after a restart", async () => {
    model = await FakeOpenAi.start();
    const env = { OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model" };
    running = await startConsoleApp(env);
    const { page, problems } = await openPage();
    model.enqueue(
      textReply(
        Array.from({ length: 80 }, (_, i) => `word${i} `),
        { pauseMs: 200 },
      ),
    );
    await page.fill("#message-input", "tell me a long story");
    await page.press("#message-input", "Enter");
    await page.locator('#messages li[data-from="bot"]', { hasText: "word2" }).waitFor({ timeout: 30_000 });
    await page.click("#stop");
    await page.locator('#messages li[data-from="bot"] .text', { hasText: /^Stopped\./ }).waitFor();
    await model.requests[0]!.closed;
    // The draft is finished with what the turn streamed and a "(stopped)" line: that is what the chat saw.
    const draft = await eventually(
      async () => running!.adapter.history("dm:alice").find((m) => m.from === "bot" && m.text.endsWith("\n\n(stopped)")),
      "the stopped draft's last edit",
      30_000,
    );
    const partial = draft.text.slice(0, -"\n\n(stopped)".length).replace(/\s+/g, " ").trim();
    expect(partial).toMatch(/^word0 word1 word2/);
    expect(partial).not.toContain("word79");
    const live = page.locator('#messages li[data-stopped="true"] .text');
    await expect.poll(async () => (await live.textContent())?.replace(/\s+/g, " ").trim()).toBe(partial);
    const wasShown = ["user: tell me a long story", `bot (stopped): ${partial}`, "user: /stop", "bot: Stopped."];
    expect(await shown(page)).toEqual(wasShown);
    expect(await shown((await openPage()).page)).toEqual(wasShown);

    await restart(env);
    const reopened = await openPage();
    // From the transcript: the question and the partial answer, marked; /stop and its notice are not transcript entries.
    expect(await shown(reopened.page)).toEqual(["user: tell me a long story", `bot (stopped): ${partial}`]);
    expect(await reopened.page.locator('#messages li[data-stopped="true"]').getAttribute("data-source")).toBe("transcript");
    expect(await reopened.page.locator('#messages li[data-stopped="true"] .stopped').textContent()).toBe("(stopped)");
    expect([...problems, ...reopened.problems]).toEqual([]);
  });
});

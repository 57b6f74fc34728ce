import fs from "node:fs";
import type { Browser } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { launchChromium } from "../support/chromium.js";
import { startConsoleApp, type ConsoleApp } from "./app.js";

const SCREENSHOT = "/tmp/console.png";

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

describe("console page in a real browser", () => {
  async function openConsole(app?: ConsoleApp) {
    // A missing browser is a broken environment, not a reason to skip: launchChromium says how to fix it.
    running = app ?? (await startConsoleApp());
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
    await page.goto(running.base);
    await page.locator('#console-stream[data-state="open"]').waitFor();
    await page.locator('#ops-stream[data-state="open"]').waitFor();
    return { page, problems };
  }

  it("chats as a private user, sees the echo, rotates with /new and sees the rotation logged", async () => {
    const { page, problems } = await openConsole();
    await expect.poll(() => page.locator("#chat-channel").textContent()).toBe("console:console:dm:alice");

    await page.fill("#user-name", "Dana Scully");
    await page.locator("#user-name").press("Tab");
    await expect.poll(() => page.locator("#chat-channel").textContent()).toBe("console:console:dm:dana-scully");

    const input = page.locator("#message-input");
    await input.fill("hello from the browser <b>not bold</b>");
    await input.press("Enter");
    const reply = page.locator('#messages li[data-from="bot"] .text', { hasText: "echo: hello from the browser" });
    await reply.waitFor();
    // Chat text is shown as text, never parsed as markup.
    expect(await reply.textContent()).toBe("echo: hello from the browser <b>not bold</b>");
    expect(await page.locator("#messages b").count()).toBe(0);

    const current = page.locator("#current-session");
    await page.locator('#current-session:not([data-session-id=""])').waitFor();
    const first = (await current.getAttribute("data-session-id"))!;
    expect(first).toMatch(/^[0-9a-f-]{36}$/);
    expect(await current.textContent()).toBe(first);

    await input.fill("/new");
    await input.press("Enter");
    await page.locator('#messages li[data-from="bot"] .text', { hasText: /fresh session/i }).waitFor();
    await expect
      .poll(
        async () => {
          const id = await current.getAttribute("data-session-id");
          return !!id && id !== first;
        },
        { timeout: 15_000 },
      )
      .toBe(true);
    const second = (await current.getAttribute("data-session-id"))!;
    expect(second).not.toBe(first);

    const logged = page.locator(`#log li[data-phase="rotated"][data-previous-id="${first}"][data-session-id="${second}"]`);
    await logged.waitFor();
    expect(await logged.textContent()).toContain(`rotated ${first} → ${second}`);

    // The operator pane follows: the old session is listed as archived, and its transcript is still readable.
    await page.locator(`#sessions-body tr[data-session-id="${first}"][data-archived="true"]`).waitFor();
    await page.locator(`#sessions-body tr[data-session-id="${second}"][data-current="true"]`).waitFor();
    await page.locator(`#sessions-body tr[data-session-id="${first}"] button`).click();
    await page.locator("#transcript-messages li", { hasText: "echo: hello from the browser" }).waitFor();
    expect(await page.locator("#transcript-info").textContent()).toContain("archived");

    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    expect(problems).toEqual([]);
  });

  it("in a group, speaks as a picked participant; only messages addressed to the bot are answered", async () => {
    const { page, problems } = await openConsole();
    await page.check("#mode-group");
    await expect.poll(() => page.locator("#chat-channel").textContent()).toBe("console:console:group:team");
    expect(await page.locator("#private-setup").isVisible()).toBe(false);

    await page.fill("#new-participant", "Eve");
    await page.click("#add-participant");
    expect(await page.locator("#speaker-eve").isChecked()).toBe(true);
    await page.uncheck("#mention");
    const input = page.locator("#message-input");
    await input.fill("side remark between people");
    await input.press("Enter");
    await page.locator('#messages li[data-from="user"][data-status="accepted"]').waitFor();

    await page.check("#speaker-bob");
    await page.check("#mention");
    await input.fill("bot, are you there?");
    await input.press("Enter");
    await page.locator('#messages li[data-from="bot"] .text', { hasText: "bot, are you there?" }).waitFor();
    // Handled in order: an answer to the side remark would have arrived first.
    expect(await page.locator('#messages li[data-from="bot"]').count()).toBe(1);
    expect(await page.locator('#messages li[data-from="user"] .who').allTextContents()).toEqual(["Eve", "Bob"]);
    // Participants are told apart: an initial and a colour each.
    expect(await page.locator('#messages li[data-from="user"] .avatar').allTextContents()).toEqual(["E", "B"]);
    const hues = await page
      .locator('#messages li[data-from="user"]')
      .evaluateAll((lis) => lis.map((li) => li.ownerDocument.defaultView!.getComputedStyle(li).backgroundColor));
    expect(new Set(hues).size).toBe(2);
    await page.locator('#current-session:not([data-session-id=""])').waitFor();

    await page.screenshot({ path: "/tmp/console-group.png", fullPage: true });
    expect(problems).toEqual([]);

    // After a restart the page reads the group's conversation from the transcript, which records who spoke.
    await page.close();
    const first = running!;
    await first.stop({ keepDatabase: true });
    running = undefined;
    const reopened = await openConsole(await startConsoleApp({}, {}, { dir: first.dir }));
    await reopened.page.check("#mode-group");
    const who = () => reopened.page.locator('#messages li[data-from="user"][data-source="transcript"] .who').allTextContents();
    await expect.poll(who, { timeout: 15_000 }).toEqual(["Eve", "Bob"]);
    expect(reopened.problems).toEqual([]);
  });

  it("renders the model's Markdown safely, stops an answer with Stop, and shows the chat from the database after a restart", async () => {
    model = await FakeOpenAi.start();
    const env = { OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model" };
    const first = await startConsoleApp(env);
    const { page, problems } = await openConsole(first);
    await expect.poll(() => page.locator("#chat-channel").textContent()).toBe("console:console:dm:alice");
    const input = page.locator("#message-input");

    const answer = [
      "Here is **bold** and `inline code`.",
      "",
      "- one",
      "- two",
      "",
      "```js",
      "const x = 1;",
      "```",
      "",
      'Raw: <img src=x onerror="window.__pwned = 1"> <script>window.__pwned = 2</script> [a link](javascript:window.__pwned=3)',
    ].join("\n");
    model.enqueue(textReply([answer.slice(0, 40), answer.slice(40)]));
    await input.fill("please format something");
    await input.press("Enter");
    const rendered = page.locator('#messages li[data-from="bot"] .text', { has: page.locator("strong") });
    await rendered.waitFor();
    expect(await rendered.locator("strong").textContent()).toBe("bold");
    expect(await rendered.locator("p code").textContent()).toBe("inline code");
    expect(await rendered.locator("ul > li").allTextContents()).toEqual(["one", "two"]);
    expect(await rendered.locator("pre code").textContent()).toBe("const x = 1;\n");
    // The operator pane's usage section counts the model call (issue 29): one call of the agent default, no price.
    await expect.poll(() => page.locator('#usage-agents-body tr[data-key="default"] td').nth(1).textContent()).toBe("1");
    expect(await page.locator('#usage-models-body tr[data-key="fake-model"] td').nth(5).textContent()).toBe("no price");
    // The model's raw HTML is text: no element made from it, no handler, no script, no javascript: link.
    expect(await rendered.textContent()).toContain('<img src=x onerror="window.__pwned = 1">');
    expect(await page.locator("#messages img, #messages script, #messages [onerror]").count()).toBe(0);
    expect(await page.locator('#messages a[href^="javascript"]').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();

    // A long answer, streamed: Stop ends it, and the partial answer is marked.
    const words = Array.from({ length: 80 }, (_, i) => `word${i} `);
    model.enqueue(textReply(words, { pauseMs: 250 }));
    const before = model.requests.length;
    await input.fill("tell me a long story");
    await input.press("Enter");
    const draft = page.locator('#messages li[data-from="bot"]', { hasText: "word0" });
    await draft.waitFor({ timeout: 30_000 });
    await page.click("#stop");
    await page.locator('#messages li[data-from="user"] .text', { hasText: "/stop" }).waitFor();
    await page.locator('#messages li[data-from="bot"] .text', { hasText: /^Stopped\./ }).waitFor();
    await page.locator('#messages li[data-from="bot"][data-stopped="true"]', { hasText: "word0" }).waitFor({ timeout: 30_000 });
    expect(await draft.locator(".stopped").textContent()).toBe("(stopped)");
    expect(await page.locator('#messages li[data-stopped="true"]').count()).toBe(1);
    // The model's stream was cut: the turn really stopped, it did not run on unseen.
    const streamed = model.requests[before]!;
    await streamed.closed;
    expect(streamed.closedByClient).toBe(true);
    expect(await draft.textContent()).not.toContain("word79");
    expect(problems).toEqual([]);
    await page.screenshot({ path: "/tmp/console-markdown.png", fullPage: true });

    // Restart the gateway on the same database: the page shows the conversation again, rendered.
    await page.close();
    await first.stop({ keepDatabase: true });
    running = undefined;
    const second = await startConsoleApp(env, {}, { dir: first.dir });
    const reopened = await openConsole(second);
    const texts = () =>
      reopened.page
        .locator("#messages > li")
        .evaluateAll((lis) =>
          lis.map(
            (li) =>
              `${li.getAttribute("data-from")}/${li.getAttribute("data-source")}: ${li.querySelector(".text")!.textContent!.replace(/\s+/g, " ").trim().slice(0, 29)}`,
          ),
        );
    await expect.poll(async () => (await texts()).length, { timeout: 15_000 }).toBe(4);
    const [question, formatted, story, partial] = await texts();
    expect([question, formatted, story]).toEqual([
      "user/transcript: please format something",
      "bot/transcript: Here is bold and inline code.",
      "user/transcript: tell me a long story",
    ]);
    // The stopped turn keeps what the chat was shown: its partial answer, marked (history.e2e.browser.test.ts checks it whole).
    expect(partial).toMatch(/^bot\/transcript: word0/);
    expect(await reopened.page.locator('#messages li[data-stopped="true"]').count()).toBe(1);
    const again = reopened.page.locator('#messages li[data-from="bot"] .text');
    expect(await again.locator("strong").textContent()).toBe("bold");
    expect(await again.locator("pre code").textContent()).toBe("const x = 1;\n");
    expect(await reopened.page.locator("#messages img, #messages script").count()).toBe(0);
    expect(await reopened.page.locator('#messages li[data-from="user"] .who').first().textContent()).toBe("Alice");
    await reopened.page.screenshot({ path: "/tmp/console-restart.png", fullPage: true });
    expect(reopened.problems).toEqual([]);
  });
});

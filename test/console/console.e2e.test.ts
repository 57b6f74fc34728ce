import fs from "node:fs";
import type { Browser } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { launchChromium } from "../support/chromium.js";
import { startConsoleApp, type ConsoleApp } from "./app.js";

const SCREENSHOT = "/tmp/console.png";

let running: ConsoleApp | undefined;
let browser: Browser | undefined;

afterEach(async () => {
  await browser?.close();
  browser = undefined;
  await running?.stop();
  running = undefined;
});

describe("console page in a real browser", () => {
  async function openConsole() {
    // A missing browser is a broken environment, not a reason to skip: launchChromium says how to fix it.
    running = await startConsoleApp();
    browser = await launchChromium();
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
      .poll(async () => {
        const id = await current.getAttribute("data-session-id");
        return !!id && id !== first;
      }, { timeout: 15_000 })
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
    await page.locator('#current-session:not([data-session-id=""])').waitFor();

    await page.screenshot({ path: "/tmp/console-group.png", fullPage: true });
    expect(problems).toEqual([]);
  });
});

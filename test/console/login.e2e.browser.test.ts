/**
 * The console behind OPERATOR_TOKEN in a real browser: the page sends an
 * unauthenticated visitor to the login form; a wrong token is refused; the
 * right one sets the cookie, the console works (chat and live streams), and
 * the cookie is HttpOnly and SameSite=Strict.
 */
import type { Browser } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { launchChromium } from "../support/chromium.js";
import { startConsoleApp, type ConsoleApp } from "./app.js";

const TOKEN = "e2e-operator-token-0123456789abcdef";

let running: ConsoleApp | undefined;
let browser: Browser | undefined;

afterEach(async () => {
  await browser?.close();
  browser = undefined;
  await running?.stop();
  running = undefined;
});

describe("console login in a real browser", () => {
  it("redirects to the login form, refuses a wrong token, and opens the console with the right one", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    browser = await launchChromium();
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));

    await page.goto(running.base);
    expect(new URL(page.url()).pathname).toBe("/login");
    await page.fill('[data-testid="login-token"]', "not the token");
    await page.click('[data-testid="login-submit"]');
    await page.locator('[data-testid="login-error"]').waitFor();
    expect(new URL(page.url()).pathname).toBe("/login");

    await page.fill('[data-testid="login-token"]', TOKEN);
    await page.click('[data-testid="login-submit"]');
    await page.locator('#console-stream[data-state="open"]').waitFor();
    await page.locator('#ops-stream[data-state="open"]').waitFor();
    expect(new URL(page.url()).pathname).toBe("/");

    const input = page.locator("#message-input");
    await input.fill("hello after login");
    await input.press("Enter");
    await page.locator('#messages li[data-from="bot"] .text', { hasText: "echo: hello after login" }).waitFor();

    const cookies = await context.cookies();
    const login = cookies.find((c) => c.name === "switchboard_operator");
    console.log(`login e2e: cookie ${JSON.stringify({ ...login, value: `${login?.value.slice(0, 6)}…` })}`);
    expect(login).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/" });
    expect(login!.value).not.toContain(TOKEN);
    // The page's script cannot read it.
    expect(await page.evaluate("document.cookie")).not.toContain("switchboard_operator");
    expect(problems).toEqual([]);
  }, 90_000);
});

/**
 * Probe: what a stranger in a group writes (display name, text, raw HTML,
 * javascript: links, a closing tag, a bidi override) and the model's echo
 * of it reach the operator's console as text only: the sessions table and
 * the transcript, in real Chromium, make no element from it and run nothing.
 */
import type { Browser } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { ConsoleAdapter } from "../../../adapters/console/index.js";
import { loadConfig } from "../../../src/config.js";
import { createApp, type App } from "../../../src/gateway/app.js";
import { silentLogger } from "../../../src/log.js";
import { eventually } from "../../support/app.js";
import { launchChromium } from "../../support/chromium.js";
import { freshDatabaseUrl } from "../../support/db.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";

let app: App | undefined;
let browser: Browser | undefined;
afterEach(async () => {
  await browser?.close();
  browser = undefined;
  await app?.stop();
  app = undefined;
});

const NAME = `<img src=x onerror="window.__pwned='name'">Eve</b>\u202Enimda`;
const TEXT = [
  `@membot <img src=x onerror="window.__pwned='text'">`,
  `<script>window.__pwned='script'</script></span></li></ol><a href="javascript:window.__pwned='a'">click</a>`,
  `[md link](javascript:window.__pwned='md') https://evil.example/phish`,
  `<svg onload="window.__pwned='svg'"></svg> </script><iframe src="javascript:parent.__pwned='if'"></iframe>`,
].join("\n");

describe("probe: hostile chat content in the operator pane", () => {
  it("a stranger's name and text, and the answer echoing them, are text in the sessions table and the transcript", async () => {
    const adapter = new MemoryAdapter();
    app = await createApp(loadConfig({ DATABASE_URL: await freshDatabaseUrl("sqlite"), HTTP_PORT: "0", LOG_LEVEL: "silent", DM_POLICY: "open" }), {
      log: silentLogger,
      adapters: () => [adapter, new ConsoleAdapter()],
    });
    const base = (await app.start()).replace("0.0.0.0", "127.0.0.1");
    await adapter.ctx.inbound(adapter.group("-100777", "666", TEXT, { mentioned: true, senderName: NAME }));
    await eventually(
      () => adapter.to("-100777").length,
      (n) => n === 1,
      10_000,
      "the echo in the group",
    );

    browser = await launchChromium();
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("dialog", (d) => {
      errors.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    await page.goto(base);
    const row = page.locator("#sessions-body tr", { hasText: "group" }).first();
    await row.waitFor();
    await row.locator("button").click();
    await page.locator('#transcript-messages li[data-role="user"]').waitFor();
    await page.locator('#transcript-messages li[data-role="assistant"]').waitFor();

    const facts = await page.evaluate(() => {
      // Run in the page: its DOM, typed here without the DOM lib (the project compiles for Node).
      type El = { outerHTML: string; textContent: string | null; querySelector(s: string): El | null; querySelectorAll(s: string): Iterable<El> };
      const page = globalThis as unknown as { document: El; __pwned?: string };
      const pane = page.document.querySelector("#transcript-messages")!;
      const sessions = page.document.querySelector("#sessions-body")!;
      return {
        pwned: page.__pwned ?? null,
        made: [...pane.querySelectorAll("img, script, a, svg, iframe, b"), ...sessions.querySelectorAll("img, script, a, svg, iframe, b")].map(
          (e) => e.outerHTML,
        ),
        userRole: pane.querySelector('li[data-role="user"] .role')!.textContent,
        userText: pane.querySelector('li[data-role="user"] .text')!.textContent,
        answer: pane.querySelector('li[data-role="assistant"] .text')!.textContent,
      };
    });
    expect(facts.pwned).toBeNull();
    expect(facts.made).toEqual([]);
    expect(errors).toEqual([]);
    // Shown as the characters it is.
    expect(facts.userRole).toContain(`<img src=x onerror="window.__pwned='name'">Eve</b>`);
    expect(facts.userText).toContain(`<script>window.__pwned='script'</script>`);
    expect(facts.answer).toContain(`<iframe src="javascript:parent.__pwned='if'"></iframe>`);
  });
});

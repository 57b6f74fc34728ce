/**
 * The console's approval buttons are readable (issue 26, item 14): each
 * button's text has at least WCAG AA's 4.5:1 contrast against what is
 * behind it, and a keyboard focus shows an outline with at least 3:1 against
 * the background around the button. Checked by the computed colours in
 * Chromium, under a light and a dark system colour scheme (the page's
 * buttons must stay readable whatever the operator's system prefers).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAi, toolUsingModel } from "../fakes/openai.js";
import { launchChromium } from "../support/chromium.js";
import { startConsoleApp, type ConsoleApp } from "./app.js";

const CLOCK = "what does the clock say";

let running: ConsoleApp | undefined;
let browser: Browser | undefined;
let model: FakeOpenAi | undefined;

beforeAll(async () => {
  model = await FakeOpenAi.start();
  model.responder = toolUsingModel({ trigger: CLOCK, tool: "current_time", args: '{"timezone":"UTC"}' });
  // The clock asks first: its card carries the three buttons.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-console-"));
  const config = path.join(dir, "mcp.json");
  fs.writeFileSync(config, JSON.stringify({ mcpServers: {}, builtinTools: { current_time: "ask" } }));
  running = await startConsoleApp({ OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model", MCP_CONFIG: config }, {}, { dir });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await running?.stop();
  await model?.close();
});

type Rgba = [number, number, number, number];

/** A computed colour ("rgb(…)" or "rgba(…)", as Chromium gives them for sRGB colours). */
function parse(css: string): Rgba {
  const m = /^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/.exec(css);
  if (!m) throw new Error(`not an sRGB colour: ${css}`);
  return [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])];
}

/** `top` painted over the opaque `bottom`. */
const over = (top: Rgba, bottom: Rgba): Rgba => {
  const a = top[3];
  return [0, 1, 2].map((i) => top[i]! * a + bottom[i]! * (1 - a)).concat(1) as Rgba;
};

/** WCAG 2 relative luminance and contrast ratio. */
function luminance([r, g, b]: Rgba): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}
function contrast(a: Rgba, b: Rgba): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

/** The backgrounds from the element up to the root, innermost first, as computed. */
function backgroundsUp(l: Locator): Promise<string[]> {
  return l.evaluate((el) => {
    const view = el.ownerDocument.defaultView!;
    const out: string[] = [];
    for (let n: typeof el | null = el; n; n = n.parentElement) out.push(view.getComputedStyle(n).backgroundColor);
    return out;
  });
}

/** What shows behind the element: its ancestors' backgrounds painted over the white canvas, outermost first. */
function effective(backgrounds: string[]): Rgba {
  return backgrounds
    .map(parse)
    .reverse()
    .reduce((below, layer) => over(layer, below), [255, 255, 255, 1] as Rgba);
}

let chats = 0;

/** A card in a chat of its own (a card waiting for a decision holds its chat's next message back). */
async function cardButtons(page: Page): Promise<Locator> {
  await page.goto(running!.base);
  await page.locator('#console-stream[data-state="open"]').waitFor();
  await page.fill("#user-name", `Tester ${++chats}`);
  await page.locator("#user-name").press("Tab");
  await expect.poll(() => page.locator("#chat-channel").textContent()).toBe(`console:console:dm:tester-${chats}`);
  await page.locator('#messages[aria-busy="false"]').waitFor();
  await page.fill("#message-input", CLOCK);
  await page.press("#message-input", "Enter");
  const buttons = page.locator("#messages li .card-actions").last().locator("button.card-button");
  await expect.poll(() => buttons.allTextContents()).toEqual(["Approve", "Deny", "Always in this chat"]);
  return buttons;
}

describe.each(["light", "dark"] as const)("the console's approval buttons, %s colour scheme", (colorScheme) => {
  it("each button's text has at least 4.5:1 contrast against its background (WCAG AA)", async () => {
    const page = await browser!.newPage({ colorScheme });
    const buttons = await cardButtons(page);
    const ratios: Record<string, number> = {};
    for (const b of await buttons.all()) {
      const color = parse(await b.evaluate((el) => el.ownerDocument.defaultView!.getComputedStyle(el).color));
      const behind = effective(await backgroundsUp(b));
      ratios[(await b.textContent())!] = Math.round(contrast(over(color, behind), behind) * 100) / 100;
    }
    for (const [label, ratio] of Object.entries(ratios)) expect(ratio, `${label}: ${JSON.stringify(ratios)}`).toBeGreaterThanOrEqual(4.5);
    await page.close();
  });

  it("Tab shows a focus outline with at least 3:1 contrast against the background around the button", async () => {
    const page = await browser!.newPage({ colorScheme });
    const buttons = await cardButtons(page);
    // From the message list, Tab moves into the card's buttons as a keyboard user's would (:focus-visible).
    await buttons.first().focus();
    await page.keyboard.press("Shift+Tab");
    for (const b of await buttons.all()) {
      await page.keyboard.press("Tab");
      const f = await b.evaluate((el) => {
        const s = el.ownerDocument.defaultView!.getComputedStyle(el);
        return {
          focused: el.ownerDocument.activeElement === el && el.matches(":focus-visible"),
          style: s.outlineStyle,
          width: Number.parseFloat(s.outlineWidth),
          color: s.outlineColor,
        };
      });
      const label = await b.textContent();
      expect(f.focused, `${label} has the keyboard focus`).toBe(true);
      expect(f.style, `${label}'s outline`).not.toBe("none");
      expect(f.width, `${label}'s outline width`).toBeGreaterThanOrEqual(2);
      // The outline is drawn outside the button (outline-offset), over the message around it.
      const around = effective(await backgroundsUp(b.locator("xpath=..")));
      const ratio = contrast(over(parse(f.color), around), around);
      expect(ratio, `${label}'s outline ${f.color} against ${around.join(",")}`).toBeGreaterThanOrEqual(3);
    }
    await page.close();
  });
});

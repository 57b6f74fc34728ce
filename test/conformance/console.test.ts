import { randomUUID } from "node:crypto";
import { Marked } from "marked";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import * as ids from "../../adapters/console/ids.js";
import { AdapterError } from "../../adapters/types.js";
import type { ConformanceDriver, Place } from "./driver.js";
import { conformance } from "./suite.js";

/** The page's Markdown renderer (adapters/console/static/markdown.js): a card as the page shows it. */
const page = new Marked({ gfm: true, breaks: true, async: false });
const ENTITIES: Record<string, string> = { "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&amp;": "&" };
/** A bot message's text as the page shows it: rendered, its markup taken out (the card escapes its names' punctuation). */
const shown = (markdown: string) =>
  (page.parse(markdown) as string)
    .replace(/<br>/g, "\n")
    .replace(/<[^>]*>/g, "")
    .replace(/&(lt|gt|quot|#39|amp);/g, (e) => ENTITIES[e]!);

/**
 * The web console through the same scenarios. Its "platform" is the browser:
 * the driver speaks the console's HTTP API as the page does, reads what the
 * page would show from the console's history, and plays the platform's 429s
 * in the console's sink (the only place a console reply can be refused).
 */
function consoleDriver(): ConformanceDriver {
  let base = "";
  let rateLimited = 0;
  let retryAfterMs = 0;
  const adapter = new ConsoleAdapter();
  const send = adapter.sink.send.bind(adapter.sink);
  adapter.sink.send = async (to, text, opts) => {
    if (rateLimited > 0) {
      rateLimited--;
      throw new AdapterError("console", "RateLimited", "slow down", retryAfterMs);
    }
    return send(to, text, opts);
  };
  const last = new Map<string, unknown>();
  const slug = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, "-").slice(0, 60);
  const chatOf = (place: Place, user: string) =>
    "dm" in place
      ? { type: "private" as const }
      : { type: "group" as const, id: slug(place.group), ...("thread" in place ? { threadId: slug(place.thread) } : {}) };
  const post = async (body: unknown) => {
    const r = await fetch(`${base}/api/console/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    if (r.status >= 400) throw new Error(`console refused a message: ${r.status} ${await r.text()}`);
  };
  const answers = new Map<string, string[]>();
  const chatIdOf = (place: Place) => ("dm" in place ? ids.dmChatId(slug(place.dm)) : ids.groupChatId(slug(place.group)));
  return {
    name: "web console",
    approvals: {
      cards(place) {
        return adapter
          .history(chatIdOf(place), "thread" in place ? slug(place.thread) : undefined)
          .filter((m) => m.card)
          .map((m) => ({ messageId: m.messageId, text: shown(m.text), buttons: m.card!.actions.length > 0 }));
      },
      async click(place, user, messageId, action) {
        const entry = adapter.history(chatIdOf(place)).find((m) => m.messageId === messageId);
        if (!entry?.card?.actions.some((a) => a.action === action)) throw new Error(`the card has no ${action} button`);
        // What the page's button sends.
        const r = await fetch(`${base}/api/console/approvals`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ approvalId: entry.card.id, action, chatId: chatIdOf(place), sender: { id: slug(user), name: user } }),
        });
        if (r.status !== 200) throw new Error(`console refused the click: ${r.status} ${await r.text()}`);
        const body = (await r.json()) as { text: string };
        const key = `${JSON.stringify(place)}|${user}`;
        answers.set(key, [...(answers.get(key) ?? []), body.text]);
      },
      privateAnswers(place, user) {
        return answers.get(`${JSON.stringify(place)}|${user}`) ?? [];
      },
    },
    routing: { chatId: chatIdOf },
    maxTextLength: adapter.limits.maxTextLength,
    async setup() {
      return { adapter };
    },
    async started(url) {
      base = url;
    },
    async say(place, user, text, opts = {}) {
      const body = { chat: chatOf(place, user), sender: { id: slug(user), name: user }, text, mention: !!opts.mention, clientId: randomUUID() };
      last.set(`${JSON.stringify(place)}|${user}`, body);
      await post(body);
    },
    async redeliverLast(place, user) {
      await post(last.get(`${JSON.stringify(place)}|${user}`));
    },
    rateLimitSends(retryAfterSec, count) {
      rateLimited = count;
      retryAfterMs = retryAfterSec * 1000;
    },
    replies(place) {
      const chatId = "dm" in place ? ids.dmChatId(slug(place.dm)) : ids.groupChatId(slug(place.group));
      const threadId = "thread" in place ? slug(place.thread) : undefined;
      return adapter
        .history(chatId, threadId)
        .filter((m) => m.from === "bot")
        .map((m) => m.text);
    },
    severities(place) {
      // What the page styles each bot message with (static/messages.js: `notice notice-<severity>`).
      return adapter
        .history(chatIdOf(place), "thread" in place ? slug(place.thread) : undefined)
        .filter((m) => m.from === "bot")
        .map((m) => m.severity);
    },
    async teardown() {},
  };
}

conformance(consoleDriver);

import { SlackAdapter } from "../../adapters/slack/index.js";
import { FakeSlack } from "../fakes/slack.js";
import type { ConformanceDriver, Place } from "./driver.js";

/**
 * Slack over HTTP (Events API, signed) through real Bolt. On Slack a
 * top-level mention opens a thread that becomes the conversation, so a
 * group's later messages go into the thread that conversation started, as
 * Slack users reply there.
 */
export function slackDriver(mode: "http" | "socket"): ConformanceDriver {
  const fake = new FakeSlack();
  let eventsUrl = "";
  const lastEnvelope = new Map<string, string>();
  let n = 0;
  const ids = new Map<string, string>();
  const id = (prefix: string, name: string) =>
    ids.get(`${prefix}${name}`) ?? (ids.set(`${prefix}${name}`, `${prefix}${(++n).toString(36).toUpperCase().padStart(8, "0")}`), ids.get(`${prefix}${name}`)!);
  const conversationRoot = new Map<string, string>();
  const threadRoots = new Map<string, string>();
  const last = new Map<string, object>();
  const ts = () => `${Math.floor(Date.now() / 1000)}.${String(++n).padStart(6, "0")}`;
  const channelOf = (place: Place) => ("dm" in place ? id("D", place.dm) : id("C", place.group));

  let interactionsUrl = "";
  const CARD = /^The agent wants to use the tool/;
  const inPlace = (place: Place) => {
    const all = fake.sent({ channel: channelOf(place) });
    return "thread" in place
      ? all.filter((m) => m.threadTs === threadRoots.get(place.thread))
      : all.filter((m) => !m.threadTs || ![...threadRoots.values()].includes(m.threadTs));
  };
  return {
    name: mode === "http" ? "slack (Bolt, HTTP mode)" : "slack (Bolt, Socket Mode)",
    approvals: {
      cards(place) {
        return inPlace(place)
          .filter((m) => !m.ephemeralTo && CARD.test(m.history[0] ?? m.text))
          .map((m) => ({
            messageId: m.ts,
            text: m.text,
            buttons: ((m.blocks ?? []) as Array<{ type?: string }>).some((b) => b.type === "actions"),
          }));
      },
      async click(place, name, messageId, action) {
        const channel = channelOf(place);
        const msg = fake.sent({ channel }).find((m) => m.ts === messageId);
        if (!msg) throw new Error(`no message ${messageId}`);
        const actions = ((msg.blocks ?? []) as Array<{ type?: string; elements?: Array<{ action_id?: string }> }>)
          .filter((b) => b.type === "actions")
          .flatMap((b) => b.elements ?? []);
        const actionId = actions.map((e) => e.action_id ?? "").find((id) => id.startsWith(`approval:${action}:`));
        if (!actionId) throw new Error(`the card has no ${action} button`);
        const payload = fake.events.blockActions({ user: id("U", name), userName: name, channel, message: { ...msg.message, blocks: msg.blocks }, actionId });
        if (mode === "socket") {
          const env = fake.sendEnvelope("interactive", payload);
          await fake.waitForAck(env.envelope_id, 15_000);
          return;
        }
        const r = await fake.postInteraction(interactionsUrl, payload);
        if (r.status !== 200) throw new Error(`the gateway answered ${r.status} to a block_actions interaction`);
      },
      privateAnswers(place, name) {
        const user = id("U", name);
        return fake
          .sent({ channel: channelOf(place) })
          .filter((m) => m.ephemeralTo === user)
          .map((m) => m.text);
      },
    },
    groups: {
      userId: (name) => id("U", name),
      // The channel id as an operator writes it (the envelope's chat is <team>/<channel>): a route's chat matches either.
      chatId: (place) => channelOf(place),
      separateGroup: (name) => ({ group: name }),
      hasLeft: (place) => fake.hasLeft(channelOf(place)),
    },
    routing: {
      // The channel id as an operator writes it (the envelope's chat is <team>/<channel>): a route's chat matches either.
      chatId: (place) => channelOf(place),
      workspaceGroup: (name) => ({ place: { group: name }, match: { team: fake.identity.teamId, chat: channelOf({ group: name }) } }),
    },
    maxTextLength: 3500,
    async setup() {
      await fake.start();
      return {
        adapter:
          mode === "http"
            ? new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })
            : new SlackAdapter({ botToken: fake.botToken, appToken: fake.appToken, apiUrl: fake.apiUrl }),
      };
    },
    async started(url) {
      eventsUrl = `${url}/slack/events`;
      interactionsUrl = `${url}/slack/interactions`;
    },
    async say(place, name, text, opts = {}) {
      const channel = channelOf(place);
      const user = id("U", name);
      const bodies: object[] = [];
      if ("dm" in place) {
        bodies.push(fake.events.message({ channel, user, text }));
      } else {
        const mention = opts.mention ? `<@${fake.identity.botUserId}> ` : "";
        let threadTs: string | undefined;
        if ("thread" in place) threadTs = threadRoots.get(place.thread) ?? (threadRoots.set(place.thread, ts()), threadRoots.get(place.thread)!);
        else threadTs = conversationRoot.get(place.group);
        const msgTs = ts();
        bodies.push(fake.events.message({ channel, user, text: `${mention}${text}`, ts: msgTs, ...(threadTs ? { threadTs } : {}) }));
        // Slack sends app_mention besides the message when the bot is mentioned.
        if (opts.mention) bodies.push(fake.events.appMention({ channel, user, text: `${mention}${text}`, ts: msgTs, ...(threadTs ? { threadTs } : {}) }));
        if (opts.mention && !threadTs && !("thread" in place)) conversationRoot.set(place.group, msgTs);
      }
      const key = `${JSON.stringify(place)}|${name}`;
      last.set(key, bodies[0]!);
      for (const b of bodies) {
        if (mode === "socket") {
          const ack = await fake.deliverEvent(b);
          if (b === bodies[0]) lastEnvelope.set(key, ack.envelopeId);
          continue;
        }
        const r = await fake.postEvent(eventsUrl, b);
        if (r.status !== 200) throw new Error(`the gateway answered ${r.status} to a Slack event`);
      }
    },
    async redeliverLast(place, name) {
      const key = `${JSON.stringify(place)}|${name}`;
      if (mode === "socket") {
        const again = fake.redeliver(lastEnvelope.get(key)!);
        await fake.waitForAck(again.envelope_id);
        return;
      }
      const body = last.get(key)!;
      await fake.postEvent(eventsUrl, body, { retryNum: 1, retryReason: "http_timeout" });
      await fake.postEvent(eventsUrl, body, { retryNum: 2, retryReason: "http_timeout" });
    },
    rateLimitSends(retryAfterSec, count) {
      fake.rateLimitNext("chat.postMessage", retryAfterSec, count);
    },
    replies(place) {
      const channel = channelOf(place);
      const all = fake.sent({ channel });
      const mine =
        "thread" in place
          ? all.filter((m) => m.threadTs === threadRoots.get(place.thread))
          : all.filter((m) => !m.threadTs || ![...threadRoots.values()].includes(m.threadTs));
      // Slack shows &, < and > as typed; the bot sends them escaped.
      return mine.map((m) => m.text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&"));
    },
    async teardown() {
      await fake.close();
    },
  };
}

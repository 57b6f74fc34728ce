/**
 * Nothing the model, a tool's arguments or a user's name says can reach
 * Slack as a control sequence (issue 26, item 3): `<!channel>`, `<@U…>` and
 * `<http://x|label>` are escaped (&amp; &lt; &gt;, as Slack documents) in
 * every mrkdwn-parsed field of every Web API call the gateway makes: a reply,
 * an approval card's `text` fallback and blocks, its edit once decided, and
 * the presser's ephemeral answer. The only sequences allowed are links the
 * reply renderer made, which show their own address.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeOpenAi, toolUsingModel } from "../../fakes/openai.js";
import { FakeSlack } from "../../fakes/slack.js";
import { eventually, startApp } from "../../support/app.js";

const EVIL = "<!channel> <!here|here> <@U0EVIL> <#C0EVIL> <http://evil.example|click me> <!subteam^S0EVIL>";

/** Every string of a call that Slack parses as mrkdwn: `text`, and each mrkdwn text object inside blocks and attachments. */
function mrkdwnFields(params: Record<string, unknown>): string[] {
  const out: string[] = [];
  if (typeof params.text === "string") out.push(params.text);
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") {
      const o = v as Record<string, unknown>;
      if (o.type === "mrkdwn" && typeof o.text === "string") out.push(o.text);
      for (const x of Object.values(o)) walk(x);
    }
  };
  for (const key of ["blocks", "attachments"]) {
    const raw = params[key];
    walk(typeof raw === "string" ? JSON.parse(raw) : raw);
  }
  return out;
}

/** The control sequences in a mrkdwn string that did not come from us: anything but a link whose label is its own address. */
function foreignSequences(text: string): string[] {
  const bad: string[] = [];
  for (const m of text.matchAll(/<([^<>]*)>/g)) {
    const link = /^(https?:\/\/[^|]+)\|(.*)$/.exec(m[1]!);
    // The renderer's links (src of a Markdown link or a bare URL) show the address itself, with | written as ∣.
    if (link && link[2]!.replace(/\u2223/g, "%7C") === link[1]) continue;
    bad.push(m[0]);
  }
  return bad;
}

describe("Slack: every mrkdwn field the gateway sends is escaped", () => {
  const fake = new FakeSlack();
  let model: FakeOpenAi;
  let app: App;
  let url = "";

  beforeAll(async () => {
    await fake.start();
    model = await FakeOpenAi.start();
    // Echoes the user (an "echo: …" reply), or calls the clock with the text in its arguments, then says what the tool said.
    model.responder = toolUsingModel({ trigger: "use the clock", tool: "current_time", args: JSON.stringify({ timezone: "UTC", note: EVIL }) });
    const r = await startApp(
      "sqlite",
      [new SlackAdapter({ botToken: fake.botToken, signingSecret: fake.signingSecret, apiUrl: fake.apiUrl })],
      { OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "fake-model", APPROVAL_TIMEOUT: "10m" },
      { mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } } },
    );
    app = r.app;
    url = r.url;
  });
  afterAll(async () => {
    await app?.stop();
    await model?.close();
    await fake.close();
  });

  const say = async (channel: string, user: string, name: string, text: string, extra: { ts?: string; threadTs?: string } = {}) => {
    const body = fake.events.message({ channel, user, text, ...extra, extra: { user_profile: { display_name: name, real_name: name } } });
    expect((await fake.postEvent(`${url}/slack/events`, body)).status).toBe(200);
  };
  const press = async (channel: string, user: string, userName: string, ts: string, action: string) => {
    const msg = fake.sent({ channel }).find((m) => m.ts === ts)!;
    const actionId = ((msg.blocks ?? []) as Array<{ type?: string; elements?: Array<{ action_id?: string }> }>)
      .flatMap((b) => (b.type === "actions" ? (b.elements ?? []) : []))
      .map((e) => e.action_id ?? "")
      .find((id) => id.startsWith(`approval:${action}:`))!;
    const payload = fake.events.blockActions({ user, userName, channel, message: { ...msg.message, blocks: msg.blocks }, actionId });
    expect((await fake.postInteraction(`${url}/slack/interactions`, payload)).status).toBe(200);
  };

  it("a reply, a card, a refusal and the decided card carry no <!…>, <@…>, <#…> or labelled link of anyone else's", async () => {
    // A reply: the model repeats the user's text, control sequences and all.
    await say("D0ESC0001", "U0EVE0001", `${EVIL} Eve`, `tell me ${EVIL} & more`);
    await eventually(
      () => fake.sent({ channel: "D0ESC0001" }),
      (s) => s.some((m) => m.text.startsWith("echo:")),
      15_000,
      "the reply",
    );

    // A card in a channel, asked for by a user whose name is control sequences; a stranger with such a name is refused.
    const channel = "C0ESC0001";
    const ts = `${Math.floor(Date.now() / 1000)}.000100`;
    const mention = `<@${fake.identity.botUserId}> use the clock`;
    const mentionBody = fake.events.appMention({ channel, user: "U0EVE0001", text: mention, ts });
    (mentionBody.event as Record<string, unknown>).user_profile = { display_name: `${EVIL} Eve` };
    await say(channel, "U0EVE0001", `${EVIL} Eve`, mention, { ts });
    expect((await fake.postEvent(`${url}/slack/events`, mentionBody)).status).toBe(200);
    const card = await eventually(
      () => fake.sent({ channel }).find((m) => (m.blocks ?? []).length > 0),
      (m) => m !== undefined,
      15_000,
      "the card",
    );
    await press(channel, "U0MAL0001", "<!everyone> Mallory", card!.ts, "approve");
    await eventually(
      () => fake.sent({ channel }).filter((m) => m.ephemeralTo === "U0MAL0001"),
      (s) => s.length >= 1,
      15_000,
      "the refusal",
    );
    await press(channel, "U0EVE0001", `${EVIL} Eve`, card!.ts, "deny");
    await eventually(
      () => fake.callsTo("chat.update"),
      (c) => c.some((x) => String(x.params.text).includes("Denied by")),
      15_000,
      "the card edited to denied",
    );
    await eventually(
      () => fake.sent({ channel }),
      (s) => s.some((m) => m.text.includes("the tool said")),
      15_000,
      "the answer",
    );

    const calls = fake.calls.filter((c) => /^chat\./.test(c.method));
    const fields = calls.flatMap((c) => mrkdwnFields(c.params).map((text) => ({ method: c.method, text })));
    const leaks = fields.flatMap((f) => foreignSequences(f.text).map((s) => `${f.method}: ${s} in ${JSON.stringify(f.text.slice(0, 200))}`));
    expect(leaks).toEqual([]);
    // Each path above did carry the text (escaped), so the check above looked at something.
    for (const method of ["chat.postMessage", "chat.update", "chat.postEphemeral"])
      expect(
        fields.some((f) => f.method === method && f.text.includes("&lt;!channel&gt;")),
        `${method} carried the escaped text`,
      ).toBe(true);
  });
});

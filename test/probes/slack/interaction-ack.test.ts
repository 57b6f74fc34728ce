/**
 * Probe: a button press is acknowledged without waiting on Slack's Web API.
 * approval-card.ts says "Bolt's action listener acks it at once (Slack wants
 * that within 3 s), then the decision is made and a refusal is posted as an
 * ephemeral message". In HTTP mode the receiver answers only once
 * app.processEvent() resolves (ack.ts), and the action listener awaits the
 * chat.postEphemeral round trip to Slack before it returns: a slow Slack API
 * then turns every press into a late answer (503 at ACK_DEADLINE_MS), which
 * Slack shows the presser as a failure although the decision was made.
 *
 * No clock window: a proxy in front of the fake holds chat.postEphemeral
 * (or, second case, chat.update: the card's edit) until the press's HTTP answer has arrived. Correct behaviour answers 200
 * while it is held; the current code answers 503 when its deadline guard fires.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SlackAdapter } from "../../../adapters/slack/index.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeSlack } from "../../fakes/index.js";
import { eventually, startApp } from "../../support/app.js";
import { clockAgent } from "../../support/clock-agent.js";

let sl: FakeSlack;
let app: App;
let url: string;
let proxy: http.Server;
let model: { close(): Promise<void> };
let release: () => void = () => {};
let held: Promise<void> = Promise.resolve();
let holding: string | undefined;

beforeAll(async () => {
  sl = new FakeSlack();
  await sl.start();
  proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      if (holding && req.url?.includes(holding)) await held;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
      const r = await fetch(`${sl.url}${req.url}`, { method: req.method ?? "POST", headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
      const body = Buffer.from(await r.arrayBuffer());
      res.writeHead(r.status, { "content-type": r.headers.get("content-type") ?? "application/json" });
      res.end(body);
    });
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  const apiUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/api/`;
  const clock = await clockAgent("use the clock", "probe-interaction-ack");
  model = clock.model;
  ({ app, url } = await startApp(
    "sqlite",
    [new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl })],
    {},
    {
      agentFactory: clock.agentFactory as never,
      mcpConfig: { servers: [], builtinTools: { current_time: { policy: "ask" } } },
    },
  ));
});
afterAll(async () => {
  release();
  await app?.stop();
  await model?.close();
  await new Promise<void>((r) => (proxy ? proxy.close(() => r()) : r()));
  await sl?.close();
});

describe("probe: a button press is acknowledged at once", () => {
  it.each(["chat.postEphemeral", "chat.update"])("the press's HTTP answer (200) does not wait for %s", async (method) => {
    const channel = method === "chat.update" ? "D0SLOWUP" : "D0SLOWAP";
    const updatesBefore = sl.callsTo("chat.update").length;
    expect((await sl.postEvent(`${url}/slack/events`, sl.events.message({ channel, user: "U0ASKS", text: "use the clock" }))).status).toBe(200);
    const card = (
      await eventually(
        () => sl.sent({ channel }).filter((m) => m.blocks !== undefined),
        (c) => c.length === 1,
        15_000,
        "the approval card",
      )
    )[0]!;
    const approve = (card.blocks as Array<{ elements?: Array<{ action_id?: string }> }>)
      .flatMap((b) => b.elements ?? [])
      .map((e) => e.action_id ?? "")
      .find((id) => id.startsWith("approval:approve:"))!;
    holding = method;
    held = new Promise<void>((r) => (release = r));
    const press = await sl.postInteraction(
      `${url}/slack/interactions`,
      sl.events.blockActions({ user: "U0ASKS", channel, message: { ...card.message, blocks: card.blocks }, actionId: approve }),
    );
    release();
    holding = undefined;
    expect(press.status).toBe(200);
    // The decision was made either way: the card is edited.
    await eventually(
      () => sl.callsTo("chat.update").length,
      (n) => n > updatesBefore,
      15_000,
      "the decided card",
    );
  });
});

/**
 * Inbound hooks through the real app (issue 18, acceptance 4): a forged
 * signature gets 401 and leaves 0 rows; a stale timestamp, a missing header,
 * an unknown hook are refused; a valid delivery runs one agent turn whose
 * answer reaches the conversation; the same delivery id again (in a row,
 * at once, after a restart) is dropped.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createApp, type App } from "../../src/gateway/app.js";
import { signatureHeader } from "../../src/gateway/http/api/signature.js";
import { silentLogger } from "../../src/log.js";
import { eventually } from "../support/app.js";
import { freshDatabaseUrl } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

const SECRET = "hook-secret-0123456789abcdef0123456789";
const HOOKS = JSON.stringify({
  deploys: { secret: SECRET, conversation: { platform: "telegram", chat: "-100200" }, prompt: "Deploy of {{json.service}} finished: {{json.status}}" },
});

let apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop();
});

async function start(url: string, adapter: MemoryAdapter) {
  const config = loadConfig({ DATABASE_URL: url, HTTP_PORT: "0", LOG_LEVEL: "silent", DM_POLICY: "open", HOOKS_CONFIG: HOOKS });
  const app = await createApp(config, { log: silentLogger, adapters: () => [adapter] });
  const base = await app.start();
  apps.push(app);
  return { app, base };
}

const post = (base: string, name: string, body: string, headers: Record<string, string>) =>
  fetch(`${base}/hooks/${name}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body }).then(async (r) => ({
    status: r.status,
    json: (await r.json()) as Record<string, unknown>,
  }));

const hookRows = async (app: App) =>
  Number(
    (
      await app.db.query(
        "test-count",
        app.db.q
          .selectFrom("InboundEvent")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("eventId", "like", "hook:%"),
      )
    )[0]!.n,
  );

describe("inbound hooks: POST /hooks/<name>", () => {
  it("a forged signature: 401 and 0 rows; a repeated delivery id: one turn", async () => {
    const url = await freshDatabaseUrl("sqlite");
    const adapter = new MemoryAdapter();
    let { app, base } = await start(url, adapter);
    // The group is known: someone talked to the bot there.
    await adapter.ctx.inbound(adapter.group("-100200", "5", "@membot hi", { mentioned: true }));
    await eventually(
      () => adapter.to("-100200").length,
      (n) => n === 1,
      10_000,
      "the group's echo",
    );

    const body = JSON.stringify({ service: "billing", status: "ok" });
    const forged = [
      await post(base, "deploys", body, {
        "switchboard-delivery": "d-1",
        "switchboard-signature": signatureHeader("not-the-secret-0123456789abcdef0123", "d-1", body),
      }),
      // Signed for another delivery id: the id is covered by the signature.
      await post(base, "deploys", body, { "switchboard-delivery": "d-1", "switchboard-signature": signatureHeader(SECRET, "d-2", body) }),
      // Signed for another body.
      await post(base, "deploys", body, { "switchboard-delivery": "d-1", "switchboard-signature": signatureHeader(SECRET, "d-1", `${body} `) }),
      // Ten minutes old.
      await post(base, "deploys", body, { "switchboard-delivery": "d-1", "switchboard-signature": signatureHeader(SECRET, "d-1", body, Date.now() - 600_000) }),
      await post(base, "deploys", body, { "switchboard-delivery": "d-1" }),
      await post(base, "deploys", body, { "switchboard-delivery": "d-1", "switchboard-signature": "t=1,v1=zz" }),
    ];
    const forgedRows = await hookRows(app);
    console.log(`hooks: ${forged.length} forged/stale/unsigned deliveries -> statuses ${forged.map((f) => f.status).join(",")}; rows recorded: ${forgedRows}`);
    expect(forged.map((f) => f.status)).toEqual([401, 401, 401, 401, 401, 401]);
    expect(forgedRows).toBe(0);
    expect((await post(base, "nope", body, { "switchboard-delivery": "d-1", "switchboard-signature": signatureHeader(SECRET, "d-1", body) })).status).toBe(404);

    const signed = () => ({ "switchboard-delivery": "d-1", "switchboard-signature": signatureHeader(SECRET, "d-1", body) });
    const first = await post(base, "deploys", body, signed());
    expect(first.status).toBe(202);
    const repeats = [
      ...(await Promise.all(Array.from({ length: 5 }, () => post(base, "deploys", body, signed())))),
      await post(base, "deploys", body, signed()),
    ];
    expect(repeats.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const answers = () => adapter.to("-100200").filter((s) => s.text.includes("Deploy of billing finished: ok"));
    await eventually(answers, (a) => a.length === 1, 10_000, "the hook's answer");
    expect(answers()[0]!.text).toMatch(/^echo: \[Webhook deploys, delivery d-1\]\nDeploy of billing finished: ok$/);

    // After a restart the delivery id is still known.
    await app.stop();
    apps = [];
    ({ app, base } = await start(url, adapter));
    const afterRestart = await post(base, "deploys", body, signed());
    expect(afterRestart.status).toBe(200);
    await app.gateway.idle();
    const turns = answers().length;
    console.log(`hooks: delivery d-1 sent ${2 + repeats.length} times (5 at once, one after a restart) -> ${turns} turn(s), ${await hookRows(app)} row(s)`);
    expect(turns).toBe(1);
    expect(await hookRows(app)).toBe(1);
  });
});

/**
 * Probe: answers of the operator surface carry conversations (transcripts,
 * sessions, bindings, the console's history, usage) and are authenticated
 * by a cookie or a bearer. None may be kept by a browser's cache (shown
 * again from disk after /logout, or to the next user of the machine) or a
 * shared cache in front of the gateway: each needs Cache-Control: no-store,
 * as the console page, its assets, the login page and the API v1 already
 * send.
 */
import { afterEach, describe, expect, it } from "vitest";
import { eventually, startConsoleApp, type ConsoleApp } from "../../console/app.js";
import { request } from "../../gateway/http-request.js";

const TOKEN = "t0ken-for-tests-0123456789abcdef";

let running: ConsoleApp | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

describe("operator answers", () => {
  it("every authenticated GET answer says Cache-Control: no-store and X-Content-Type-Options: nosniff", async () => {
    running = await startConsoleApp({ OPERATOR_TOKEN: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const posted = await request(running.base, "/api/console/messages", {
      method: "POST",
      headers: { "content-type": "application/json", ...auth },
      body: JSON.stringify({ chat: { type: "private" }, sender: { id: "alice", name: "alice" }, text: "a private thing" }),
    });
    expect(posted.status).toBe(202);
    const sessionId = await eventually(async () => {
      const r = JSON.parse((await request(running!.base, "/api/sessions", { headers: auth })).body) as { sessions: Array<{ id: string }> };
      return r.sessions[0]?.id;
    }, "a session");
    const paths = [
      "/",
      "/api/sessions",
      `/api/sessions/${sessionId}`,
      "/api/bindings",
      "/api/console/history?chatId=dm:alice",
      "/api/console/address?type=private&id=alice",
      "/api/slack/installations",
      "/api/usage",
      "/api/budgets",
      "/metrics",
      "/api/v1/openapi.json",
    ];
    const missing: string[] = [];
    for (const p of paths) {
      const r = await request(running.base, p, { headers: auth });
      if (r.status !== 200) missing.push(`${p}: status ${r.status}`);
      else if (!/no-store/.test(String(r.headers["cache-control"] ?? ""))) missing.push(`${p}: cache-control ${String(r.headers["cache-control"])}`);
      else if (r.headers["x-content-type-options"] !== "nosniff") missing.push(`${p}: x-content-type-options ${String(r.headers["x-content-type-options"])}`);
    }
    expect(missing).toEqual([]);
  });
});

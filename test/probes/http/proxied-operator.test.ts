/**
 * Probe: the operator surface without OPERATOR_TOKEN is "open to loopback
 * only" (README, Security). A request that carries a reverse proxy's
 * forwarding headers did not start on this machine (operator-auth.ts says
 * so, and /healthz withholds its details from it), yet the operator routes
 * themselves let it in: the tokenless check is the Host allowlist alone. A
 * gateway on HTTP_HOST=127.0.0.1 with PUBLIC_URL set (needed for Slack's
 * HTTP mode and OAuth) behind a proxy that forwards more than the webhook
 * paths (Caddy's plain `reverse_proxy`, nginx `location /`) then serves the
 * console API, the HTTP API v1 (send as the bot) and /metrics to anyone.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startConsoleApp, type ConsoleApp } from "../../console/app.js";
import { request } from "../../gateway/http-request.js";

let running: ConsoleApp | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

describe("no OPERATOR_TOKEN, loopback bind, a request forwarded by a reverse proxy", () => {
  it("gets no operator route: the forwarding headers say it did not come from this machine", async () => {
    running = await startConsoleApp({ PUBLIC_URL: "https://bot.example.com" });
    const base = running.base;
    // What the proxy sends: the real Host (as README's nginx example does) or the upstream's, plus the client's address.
    const viaProxy: Record<string, string>[] = [
      { host: "bot.example.com", "x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https" },
      { host: "127.0.0.1", "x-forwarded-for": "203.0.113.9" },
      { host: "bot.example.com", forwarded: "for=203.0.113.9;proto=https" },
    ];
    const seen: Record<string, number> = {};
    for (const [i, h] of viaProxy.entries()) {
      for (const path of ["/api/sessions", "/metrics", "/api/v1/openapi.json", "/"])
        seen[`${i} GET ${path}`] = (await request(base, path, { headers: h })).status;
      seen[`${i} POST /api/v1/messages`] = (
        await request(base, "/api/v1/messages", {
          method: "POST",
          headers: { ...h, "content-type": "application/json" },
          body: JSON.stringify({ to: { platform: "console", chatId: "dm:alice" }, text: "from the internet" }),
        })
      ).status;
    }
    const granted = Object.entries(seen).filter(([, status]) => status < 300 || status === 400 || status === 404 || status === 422);
    expect(granted).toEqual([]);
  });

  it("a direct loopback request (no forwarding headers) still gets the open console (the two-command start)", async () => {
    running = await startConsoleApp({ PUBLIC_URL: "https://bot.example.com" });
    expect((await request(running.base, "/api/sessions")).status).toBe(200);
  });
});

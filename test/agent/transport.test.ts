import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { isAgentError, openAiAgent } from "../../src/agent/index.js";
import { modelFetch } from "../../src/agent/transport.js";
import { KEY, runTurn } from "./helpers.js";

/** A plain Node server (not the fake's framework): what arrives on the wire, and every connection opened. */
async function server(handler: http.RequestListener) {
  const connections: net.Socket[] = [];
  const srv = http.createServer(handler);
  srv.on("connection", (s) => connections.push(s));
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return {
    url,
    connections,
    close: () => {
      srv.closeAllConnections();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

let open: { close: () => Promise<void> } | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

const readAll = async (body: ReadableStream<Uint8Array> | null) => (body ? new Response(body).text() : "");

describe("modelFetch, the model call's HTTP client", () => {
  it("POSTs the body with its length and the given headers, and asks for no compression", async () => {
    const seen: { headers: http.IncomingHttpHeaders; body: string }[] = [];
    const s = await server((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        seen.push({ headers: req.headers, body });
        res.end("ok");
      });
    });
    open = s;
    const payload = JSON.stringify({ text: "héllo" });
    const res = await modelFetch(`${s.url}/v1/chat/completions`, {
      method: "POST",
      headers: { Authorization: "Bearer k", "content-type": "application/json" },
      body: payload,
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok");
    expect(seen[0]!.body).toBe(payload);
    expect(seen[0]!.headers["content-length"]).toBe(String(Buffer.byteLength(payload)));
    expect(seen[0]!.headers.authorization).toBe("Bearer k");
    expect(seen[0]!.headers["accept-encoding"]).toBeUndefined();
    expect(seen[0]!.headers["user-agent"]).toBe("switchboard");
  });

  it("streams the body as the server writes it: the first event is read while the server still holds the rest", async () => {
    let finish!: () => void;
    const s = await server((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: one\n\n");
      finish = () => res.end("data: [DONE]\n\n");
    });
    open = s;
    const res = await modelFetch(s.url, { method: "POST", body: "{}" });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("data: one\n\n");
    finish();
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toBe("data: [DONE]\n\n");
  });

  it("keeps the connection: three calls one after another open one", async () => {
    const s = await server((_req, res) => res.end("ok"));
    open = s;
    for (let i = 0; i < 3; i++) expect(await (await modelFetch(s.url, { method: "POST", body: "{}" })).text()).toBe("ok");
    expect(s.connections).toHaveLength(1);
  });

  it("a kept connection the server closes as a request goes out: sent again on a new connection, once, and answered", async () => {
    const perSocket = new Map<net.Socket, number>();
    const s = await server((req, res) => {
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      // The second request on a connection finds it closed, as an idle connection the server timed out.
      if (n === 2) req.socket.destroy();
      else res.end(`ok ${n}`);
    });
    open = s;
    expect(await (await modelFetch(s.url, { method: "POST", body: "{}" })).text()).toBe("ok 1");
    expect(await (await modelFetch(s.url, { method: "POST", body: "{}" })).text()).toBe("ok 1");
    expect(s.connections).toHaveLength(2);
  });

  it("sent again once only: when the new connection is reset too, the caller hears the reset", async () => {
    let requests = 0;
    const s = await server((req, res) => {
      // Only the very first request is answered; every later one finds its connection reset.
      if (++requests === 1) res.end("ok");
      else req.socket.destroy();
    });
    open = s;
    expect(await (await modelFetch(s.url, { method: "POST", body: "{}" })).text()).toBe("ok");
    await expect(modelFetch(s.url, { method: "POST", body: "{}" })).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(requests).toBe(3);
    expect(s.connections).toHaveLength(2);
  });

  it("aborted while waiting for headers: rejects with the signal's reason and closes the connection", async () => {
    let arrived!: () => void;
    const came = new Promise<void>((r) => (arrived = r));
    const s = await server(() => arrived());
    open = s;
    const ctl = new AbortController();
    const p = modelFetch(s.url, { method: "POST", body: "{}", signal: ctl.signal });
    await came;
    const closed = new Promise<void>((r) => s.connections[0]!.once("close", () => r()));
    ctl.abort();
    await expect(p).rejects.toMatchObject({ name: "AbortError" });
    await closed;
  });

  it("aborted mid-body: the reader fails and the connection closes", async () => {
    const s = await server((_req, res) => {
      res.writeHead(200);
      res.write("data: one\n\n");
    });
    open = s;
    const ctl = new AbortController();
    const res = await modelFetch(s.url, { method: "POST", body: "{}", signal: ctl.signal });
    const reader = res.body!.getReader();
    await reader.read();
    const closed = new Promise<void>((r) => s.connections[0]!.once("close", () => r()));
    ctl.abort();
    await expect(reader.read()).rejects.toBeDefined();
    await closed;
  });

  it("a connection refused rejects with its code; an already aborted signal sends nothing", async () => {
    const s = await server((_req, res) => res.end());
    const url = s.url;
    await s.close();
    await expect(modelFetch(url, { method: "POST", body: "{}" })).rejects.toMatchObject({ code: "ECONNREFUSED" });
    const ctl = new AbortController();
    ctl.abort();
    await expect(modelFetch(url, { method: "POST", body: "{}", signal: ctl.signal })).rejects.toMatchObject({ name: "AbortError" });
  });

  it("a 204 has no body", async () => {
    const s = await server((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    open = s;
    const none = await modelFetch(s.url, { method: "POST", body: "{}" });
    expect(none.status).toBe(204);
    expect(await readAll(none.body)).toBe("");
  });

  it("a status no Response can carry (999, from a raw socket) is an error, not an answer", async () => {
    const raw = net.createServer((sock) => sock.once("data", () => sock.end("HTTP/1.1 999 Odd\r\ncontent-length: 1\r\n\r\nx")));
    await new Promise<void>((r) => raw.listen(0, "127.0.0.1", r));
    open = { close: () => new Promise<void>((r) => raw.close(() => r())) };
    const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
    await expect(modelFetch(url, { method: "POST", body: "{}" })).rejects.toThrow(RangeError);
  });

  it("does not follow a redirect: the agent reports where it points, to set OPENAI_BASE_URL", async () => {
    let posts = 0;
    const s = await server((_req, res) => {
      posts++;
      res.writeHead(308, { location: "https://models.example/v2/chat/completions?key=x" });
      res.end();
    });
    open = s;
    const agent = openAiAgent({ baseUrl: `${s.url}/v1`, apiKey: KEY, settings: { model: "m" }, retryBaseMs: 5 });
    const { error } = await runTurn(agent, { system: "", messages: [{ role: "user", content: "hi" }] });
    expect(isAgentError(error) && error.code).toBe("Config");
    expect(String((error as Error).message)).toContain("redirected the request to https://models.example/v2/chat/completions (HTTP 308)");
    expect(String((error as Error).message)).toContain("OPENAI_BASE_URL");
    expect(String((error as Error).message)).not.toContain("key=x");
    expect(posts).toBe(1);
  });
});

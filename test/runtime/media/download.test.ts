/**
 * The file download every platform's attachments go through, attacked from
 * a raw HTTP server: oversized (declared, Content-Length, streamed), a
 * stall before headers and mid-body, a 404, redirects (same host: followed;
 * another host: refused, and the token never reaches it), and URLs off the
 * platform's hosts. Errors name the file's label, never the URL or a token.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { downloadFile } from "../../../src/runtime/media/download.js";
import { MediaError } from "../../../src/runtime/media/errors.js";
import type { FileLocation } from "../../../src/runtime/media/types.js";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(handler: Handler, host = "127.0.0.1"): Promise<{ base: string; host: string; requests: http.IncomingMessage[]; closed: Promise<void> }> {
  const requests: http.IncomingMessage[] = [];
  let markClosed!: () => void;
  const closed = new Promise<void>((r) => (markClosed = r));
  const server = http.createServer((req, res) => {
    requests.push(req);
    res.on("close", () => markClosed());
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as AddressInfo).port;
  return { base: `http://${host}:${port}`, host: `${host}:${port}`, requests, closed };
}

const TOKEN = "123456:SECRET-TOKEN-abc";
const loc = (s: { base: string; host: string }, path = `/file/bot${TOKEN}/photos/a.jpg`, extra: Partial<FileLocation> = {}): FileLocation => ({
  url: `${s.base}${path}`,
  allowedHosts: [s.host],
  label: "telegram file photos/a.jpg",
  headers: { authorization: `Bearer ${TOKEN}` },
  ...extra,
});

async function failure(p: Promise<unknown>): Promise<MediaError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MediaError);
  const e = err as MediaError;
  expect(e.message).not.toContain(TOKEN);
  expect(e.message).not.toContain("/file/bot");
  return e;
}

describe("downloadFile", () => {
  it("downloads a file under the cap, with the location's headers", async () => {
    const s = await serve((_req, res) => res.end(Buffer.from("hello bytes")));
    const bytes = await downloadFile(loc(s), { maxBytes: 100, timeoutMs: 5_000 });
    expect(bytes.toString()).toBe("hello bytes");
    expect(s.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it("refuses a file whose declared size is over the cap without requesting it", async () => {
    const s = await serve((_req, res) => res.end("x"));
    const e = await failure(downloadFile(loc(s, undefined, { size: 5_000 }), { maxBytes: 1_000, timeoutMs: 5_000 }));
    expect([e.code, e.size]).toEqual(["TooLarge", 5_000]);
    expect(s.requests).toHaveLength(0);
  });

  it("refuses a Content-Length over the cap before reading the body", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "content-length": 10_000_000 });
      res.write(Buffer.alloc(1000));
    });
    const e = await failure(downloadFile(loc(s), { maxBytes: 1_000, timeoutMs: 5_000 }));
    expect([e.code, e.size]).toEqual(["TooLarge", 10_000_000]);
  });

  it("stops reading a chunked body at the cap and drops the connection (the server sees it close)", async () => {
    let written = 0;
    const s = await serve((_req, res) => {
      const pump = () => {
        while (!res.destroyed && written < 50_000_000 && res.write(Buffer.alloc(64 * 1024))) written += 64 * 1024;
        if (!res.destroyed && written < 50_000_000) res.once("drain", pump);
      };
      pump();
    });
    const e = await failure(downloadFile(loc(s), { maxBytes: 200_000, timeoutMs: 10_000 }));
    expect(e.code).toBe("TooLarge");
    await s.closed;
    expect(written).toBeLessThan(50_000_000);
  });

  it("gives up on a server that never answers, and on one that stalls mid-body", async () => {
    const silent = await serve(() => undefined);
    expect((await failure(downloadFile(loc(silent), { maxBytes: 1_000_000, timeoutMs: 300 }))).code).toBe("Timeout");
    const stalls = await serve((_req, res) => {
      res.writeHead(200, { "content-length": 1000 });
      res.write(Buffer.alloc(10));
    });
    expect((await failure(downloadFile(loc(stalls), { maxBytes: 1_000_000, timeoutMs: 300 }))).code).toBe("Timeout");
  });

  it("stops when the turn is aborted (a /stop mid-download)", async () => {
    const silent = await serve(() => undefined);
    const abort = new AbortController();
    const p = downloadFile(loc(silent), { maxBytes: 1_000_000, timeoutMs: 60_000, signal: abort.signal });
    await new Promise<void>((r) => (silent.requests.length ? r() : setTimeout(r, 50)));
    abort.abort(new Error("stopped"));
    expect((await failure(p)).code).toBe("Aborted");
  });

  it("a 404 is NotFound, a 500 is Failed", async () => {
    const s = await serve((req, res) => {
      res.writeHead(req.url?.includes("gone") ? 404 : 500);
      res.end("no");
    });
    expect((await failure(downloadFile(loc(s, "/gone"), { maxBytes: 1000, timeoutMs: 5_000 }))).code).toBe("NotFound");
    expect((await failure(downloadFile(loc(s, "/boom"), { maxBytes: 1000, timeoutMs: 5_000 }))).code).toBe("Failed");
  });

  it("follows a redirect on the platform's host, refuses one to another host, which never sees the token", async () => {
    const elsewhere = await serve((_req, res) => res.end("stolen"), "127.0.0.2");
    const s = await serve((req, res) => {
      if (req.url === "/moved") return res.writeHead(302, { location: "/final" }).end();
      if (req.url === "/away") return res.writeHead(302, { location: `${elsewhere.base}/grab` }).end();
      res.end("final bytes");
    });
    expect((await downloadFile(loc(s, "/moved"), { maxBytes: 1000, timeoutMs: 5_000 })).toString()).toBe("final bytes");
    expect(s.requests.map((r) => [r.url, r.headers.authorization])).toEqual([
      ["/moved", `Bearer ${TOKEN}`],
      ["/final", `Bearer ${TOKEN}`],
    ]);
    const e = await failure(downloadFile(loc(s, "/away"), { maxBytes: 1000, timeoutMs: 5_000 }));
    expect(e.code).toBe("Refused");
    expect(elsewhere.requests).toHaveLength(0);
  });

  it("refuses a URL off the allowed hosts, or not http(s), without a request", async () => {
    const s = await serve((_req, res) => res.end("x"));
    expect((await failure(downloadFile(loc(s, "/x", { allowedHosts: ["files.slack.com"] }), { maxBytes: 1000, timeoutMs: 5_000 }))).code).toBe("Refused");
    expect((await failure(downloadFile({ ...loc(s), url: "file:///etc/passwd", allowedHosts: [""] }, { maxBytes: 1000, timeoutMs: 5_000 }))).code).toBe(
      "Refused",
    );
    expect(s.requests).toHaveLength(0);
  });

  it("a refused connection is Failed, named by its label", async () => {
    const s = await serve(() => undefined);
    const dead = { ...loc(s) };
    servers.pop()!.close();
    const e = await failure(downloadFile(dead, { maxBytes: 1000, timeoutMs: 5_000 }));
    expect(e.code).toBe("Failed");
    expect(e.message).toContain("telegram file photos/a.jpg");
  });
});

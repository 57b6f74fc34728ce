import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { patched, SDK_PATCHES } from "../scripts/build-patches.mjs";

const require = createRequire(import.meta.url);
/** The installed file each patch is for (the build resolves the same ones from src/ and adapters/). */
const INSTALLED = [
  path.join(path.dirname(require.resolve("@slack/bolt")), "index.js"),
  path.join(path.dirname(require.resolve("@slack/bolt")), "App.js"),
  path.join(path.dirname(require.resolve("@discordjs/rest")), "../node_modules/@vladfrangu/async_event_emitter/dist/index.cjs"),
  require.resolve("node-fetch"),
  path.join(path.dirname(require.resolve("@discordjs/rest")), "../../../@vladfrangu/async_event_emitter/dist/index.cjs"),
  require.resolve("@discordjs/rest"),
  path.join(path.dirname(require.resolve("discord.js")), "util/Util.js"),
  path.join(path.dirname(require.resolve("discord.js")), "util/DataResolver.js"),
].filter((f) => fs.existsSync(f));

/** Evaluates `file` as the build patches it (its first matching patch), recording every id it requires. */
function loadPatched(file: string, patch = SDK_PATCHES.find((p) => p.file.test(file))!): { exports: Record<string, unknown>; required: string[] } {
  const mod = { exports: {} as Record<string, unknown> };
  const local = createRequire(file);
  const required: string[] = [];
  const tracking = Object.assign((id: string) => (required.push(id), local(id)), local);
  new Function("exports", "require", "module", "__filename", "__dirname", patched(file, fs.readFileSync(file, "utf8"), patch))(
    mod.exports,
    tracking,
    mod,
    file,
    path.dirname(file),
  );
  return { exports: mod.exports, required };
}

describe("the build's SDK patches (scripts/build-patches.mjs)", () => {
  it("each applies to the SDK installed now: every line it replaces is there, and none is left", () => {
    for (const patch of SDK_PATCHES) {
      const files = INSTALLED.filter((f) => patch.file.test(f));
      expect(files.length, String(patch.file)).toBeGreaterThan(0);
      for (const f of files) {
        const out = patched(f, fs.readFileSync(f, "utf8"), patch);
        for (const [eager, lazy] of patch.edits) {
          expect(out.includes(eager), `${f}: ${eager.slice(0, 60)}`).toBe(false);
          expect(out.includes(lazy)).toBe(true);
        }
      }
    }
  });

  it("refuses a file that no longer reads as expected, naming it, rather than leave the SDK loading it again", () => {
    const patch = SDK_PATCHES[0]!;
    expect(() => patched("/sdk/index.js", "module.exports = {};\n", patch)).toThrow(/\/sdk\/index\.js no longer reads/);
  });

  it("Bolt's receivers load on first use: HTTPReceiver, HTTPModuleFunctions, HTTPResponseAck and SocketModeReceiver still resolve through the patched index", () => {
    const [boltIndex] = INSTALLED.filter((f) => SDK_PATCHES[0]!.file.test(f));
    const mod = loadPatched(boltIndex!, SDK_PATCHES[0]!);
    const required = mod.required;
    // Socket Mode (@slack/socket-mode, undici 7) is not required by the index's load.
    expect(required.filter((id) => /SocketMode(Receiver)?$|socket-mode/.test(id))).toEqual([]);
    const bolt = mod.exports as Record<string, unknown> & { HTTPModuleFunctions: { defaultBodyLimit: unknown } };
    expect(typeof bolt.SocketModeReceiver).toBe("function");
    expect(typeof bolt.HTTPReceiver).toBe("function");
    expect(typeof bolt.ExpressReceiver).toBe("function");
    expect(typeof bolt.HTTPResponseAck).toBe("function");
    expect(typeof bolt.isRawBodyError).toBe("function");
    expect(bolt.defaultBodyLimit).toBe(bolt.HTTPModuleFunctions.defaultBodyLimit);
  });

  it("node-fetch, patched, still fetches with Node's URL and never loads whatwg-url", async () => {
    const mod = loadPatched(require.resolve("node-fetch"));
    const required = mod.required;
    const fetch = mod.exports.default as (url: string) => Promise<{ status: number }>;
    const http = await import("node:http");
    const server = http.createServer((_req, res) => res.end("ok"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { port } = server.address() as { port: number };
      expect((await fetch(`http://127.0.0.1:${port}/x?y=1`)).status).toBe(200);
    } finally {
      server.close();
    }
    expect(required).not.toContain("whatwg-url");
  });

  it("@discordjs/rest, patched, loads without undici and sends through the fetch it is given (the Discord adapter gives Node's)", async () => {
    const mod = loadPatched(require.resolve("@discordjs/rest"));
    const required = mod.required;
    expect(required).not.toContain("undici");
    const { REST } = mod.exports as { REST: new (o: object) => { setToken(t: string): { get(route: `/${string}`): Promise<unknown> } } };
    const http = await import("node:http");
    const server = http.createServer((req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ path: req.url, auth: req.headers.authorization }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { port } = server.address() as { port: number };
      const rest = new REST({ api: `http://127.0.0.1:${port}/api`, makeRequest: (url: string, init: RequestInit) => fetch(url, init), retries: 0 });
      expect(await rest.setToken("t0k3n").get("/gateway/bot")).toEqual({ path: "/api/v10/gateway/bot", auth: "Bot t0k3n" });
    } finally {
      server.close();
    }
    expect(required).not.toContain("undici");
  });
});

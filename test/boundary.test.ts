import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

function files(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    // Generated code, and installed packages (bench/.peers/: the peers scenario's git-ignored install of OpenClaw and Node 24) are not ours.
    if (e.isDirectory()) return e.name === "generated" || e.name === "node_modules" || e.name.startsWith(".") ? [] : files(p);
    return /\.(ts|mts|js|mjs)$/.test(e.name) ? [p] : [];
  });
}

function imports(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  return [...text.matchAll(/(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1] ?? m[2]!);
}

/** The files `file` reaches through its relative imports, itself included (an import of `x.js` is the `x.ts` beside it). */
function reach(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file) || !fs.existsSync(file)) return seen;
  seen.add(file);
  for (const i of imports(file).filter((s) => s.startsWith("."))) {
    const target = path.resolve(path.dirname(file), i);
    reach(fs.existsSync(target) ? target : target.replace(/\.js$/, ".ts"), seen);
  }
  return seen;
}

/** The files that import vitest among those `entries` reach (relative paths). */
function vitestImporters(entries: string[]): string[] {
  const reached = new Set<string>();
  for (const f of entries) reach(path.resolve(f), reached);
  return [...reached].filter((f) => imports(f).some((i) => i === "vitest" || i.startsWith("vitest/"))).map((f) => path.relative(process.cwd(), f));
}

const SDKS = /^(discord\.js|@discordjs\/|grammy|@grammyjs\/|@slack\/)/;
const LAYERS = ["store", "session", "agent", "runtime", "gateway"] as const;

/**
 * src/gateway's feature folders, lowest first: a folder imports only from the
 * ones before it and from the gateway's root files (the adapter contract,
 * metrics, the ledger); the root files import no folder, except app.ts, which
 * wires them all from the parts wiring/ builds (the top folder). (http serves the console over inbound's and outbound's
 * state; inbound hands notices to outbound; outbound sends through adapters;
 * proactive messages go out through outbound and in through the gateway's
 * intake, which the HTTP API hands them; format holds the chunkers the
 * adapters' formatters and outbound's fallback share, and imports no folder.)
 */
const GATEWAY_FOLDERS = ["format", "usage", "outbound", "inbound", "jobs", "proactive", "http", "wiring"] as const;
const GATEWAY_WIRING = new Set([path.join("src", "gateway", "app.ts")]);

/** The gateway folder (or "" for a root file) that `file` (a path) lies in, or undefined outside src/gateway. */
function gatewayFolder(file: string): string | undefined {
  const rel = path.relative(path.join("src", "gateway"), path.resolve(file));
  if (rel.startsWith("..") || path.isAbsolute(rel)) return undefined;
  const parts = rel.split(path.sep);
  return parts.length > 1 ? parts[0]! : "";
}

/** Imports of a gateway file that point into a folder above its own (or, from a root file, into any folder). */
function gatewayOffenders(file: string, specs: string[]): string[] {
  const own = gatewayFolder(file);
  if (own === undefined || GATEWAY_WIRING.has(file)) return [];
  const rank = own === "" ? -1 : GATEWAY_FOLDERS.indexOf(own as (typeof GATEWAY_FOLDERS)[number]);
  return specs
    .filter((i) => i.startsWith("."))
    .filter((i) => {
      const target = gatewayFolder(path.relative(process.cwd(), path.resolve(path.dirname(file), i)));
      if (target === undefined || target === "" || target === own) return false;
      const targetRank = GATEWAY_FOLDERS.indexOf(target as (typeof GATEWAY_FOLDERS)[number]);
      return targetRank < 0 || targetRank >= rank;
    })
    .map((i) => `${file} -> ${i}`);
}

/**
 * The configuration (src/config.ts, src/config/) sits below every layer, beside the shared modules: any
 * layer may read it, and it imports none of them (nor the CLI, the doctor or main), only its own files
 * and the modules every layer may use.
 */
const CONFIG_FILES = () => [path.join("src", "config.ts"), ...files(path.join("src", "config"))];
const CONFIG_MAY_IMPORT = new Set(["config.ts", "config", "errors.ts", "validation-message.ts"]);

/** Imports of a configuration file that reach out of the configuration into a layer (or anything but the shared modules). */
function configOffenders(file: string, specs: string[]): string[] {
  return specs
    .filter((i) => i.startsWith("."))
    .filter((i) => {
      const target = path.relative("src", path.resolve(path.dirname(file), i));
      return target.startsWith("..") || !CONFIG_MAY_IMPORT.has(target.split(path.sep)[0]!.replace(/\.js$/, ".ts"));
    })
    .map((i) => `${file} -> ${i}`);
}

/** What adapters/ may use of src/: the adapter contract, the chunkers (gateway/format), the logger, channel encoding and the configuration's types. */
const ADAPTER_MAY_IMPORT = /\/src\/(gateway\/(contract|adapter|format\/chunk-(text|html))|log|config|session\/channel)\.js$/;

describe("layer boundaries (DESIGN.md)", () => {
  it("nothing under src/ imports a platform SDK", () => {
    const offenders = files("src").flatMap((f) =>
      imports(f)
        .filter((i) => SDKS.test(i))
        .map((i) => `${f} -> ${i}`),
    );
    expect(offenders).toEqual([]);
  });

  it("nothing under adapters/ imports Prisma or src/store", () => {
    const offenders = files("adapters").flatMap((f) =>
      imports(f)
        .filter((i) => /^@prisma\/|^prisma|\/store(\/|$)|generated\/(sqlite|postgresql)/.test(i))
        .map((i) => `${f} -> ${i}`),
    );
    expect(offenders).toEqual([]);
  });

  it("adapters/ use only the contract, the chunker, the logger, the configuration and channel encoding of src/", () => {
    const offenders = files("adapters").flatMap((f) =>
      imports(f)
        .filter((i) => i.includes("/src/") && !ADAPTER_MAY_IMPORT.test(i))
        .map((i) => `${f} -> ${i}`),
    );
    expect(offenders).toEqual([]);
  });

  it("src/gateway's folders import only down: http -> inbound -> outbound -> the contract (app.ts wires them)", () => {
    const gatewayFiles = files(path.join("src", "gateway"));
    for (const folder of GATEWAY_FOLDERS)
      expect(
        gatewayFiles.some((f) => gatewayFolder(f) === folder),
        `src/gateway/${folder} has files`,
      ).toBe(true);
    expect(gatewayFiles.flatMap((f) => gatewayOffenders(f, imports(f)))).toEqual([]);
  });

  it("the modules every layer may use (src/errors.ts, src/keyed-queue.ts, src/bounded.ts, src/log.ts) import no layer", () => {
    const shared = ["errors.ts", "keyed-queue.ts", "bounded.ts", "log.ts"].map((f) => path.join("src", f));
    for (const f of shared) expect(fs.existsSync(f), f).toBe(true);
    const offenders = shared.flatMap((f) =>
      imports(f)
        .filter((i) => i.startsWith("."))
        .map((i) => `${f} -> ${i}`),
    );
    expect(offenders).toEqual([]);
  });

  it("src/telemetry sits below the layers: it imports only its own files, the configuration and the logger", () => {
    const telemetry = files(path.join("src", "telemetry"));
    expect(telemetry.length).toBeGreaterThan(1);
    const offenders = telemetry.flatMap((f) =>
      imports(f)
        .filter((i) => i.startsWith("."))
        .filter((i) => {
          const target = path.relative("src", path.resolve(path.dirname(f), i)).split(path.sep)[0]!;
          return !["telemetry", "config.js", "log.js"].includes(target);
        })
        .map((i) => `${f} -> ${i}`),
    );
    expect(offenders).toEqual([]);
    // Nothing of the OpenTelemetry SDK is imported statically outside src/telemetry/sdk.ts and the meter it
    // loads (the API is: it is a no-op while off), and nothing but sdk.ts imports the meter.
    const sdkFiles = [path.join("src", "telemetry", "sdk.ts"), path.join("src", "telemetry", "meter.ts")];
    const sdkImports = files("src").flatMap((f) =>
      imports(f)
        .filter((i) => i.startsWith("@opentelemetry/") && i !== "@opentelemetry/api")
        .map((i) => `${f} -> ${i}`),
    );
    expect(sdkImports.every((x) => sdkFiles.some((s) => x.startsWith(`${s} `)))).toBe(true);
    expect(sdkImports.length).toBeGreaterThan(0);
    const meterImporters = files("src").filter((f) => imports(f).some((i) => i.endsWith("/meter.js")));
    expect(meterImporters).toEqual([path.join("src", "telemetry", "sdk.ts")]);
  });

  it("imports under src/ only point down the layers", () => {
    const offenders: string[] = [];
    for (const [rank, layer] of LAYERS.entries()) {
      for (const f of files(path.join("src", layer))) {
        for (const i of imports(f).filter((x) => x.startsWith("."))) {
          const target = path.relative("src", path.resolve(path.dirname(f), i)).split(path.sep)[0]!;
          const targetRank = LAYERS.indexOf(target as (typeof LAYERS)[number]);
          if (targetRank > rank) offenders.push(`${f} -> ${i}`);
          if (["cli.ts", "main.ts", "cli", "doctor"].includes(target)) offenders.push(`${f} -> ${i}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it("the checks above can fail: they see a forbidden import in a sample", () => {
    const sample = path.join("test", "fixtures-boundary.tmp.ts");
    fs.writeFileSync(sample, `import { Bot } from "grammy";\nexport const x = await import("@prisma/client");\n`);
    try {
      expect(imports(sample)).toEqual(["grammy", "@prisma/client"]);
      expect(imports(sample).filter((i) => SDKS.test(i))).toEqual(["grammy"]);
    } finally {
      fs.rmSync(sample);
    }
  });

  it("the gateway folder check can fail: it sees upward imports between the folders", () => {
    const at = (folder: string) => path.join("src", "gateway", folder, "x.ts");
    // outbound reaching up into inbound, inbound into http, a root file into a folder: all refused.
    expect(gatewayOffenders(at("outbound"), ["../inbound/gateway.js"])).toHaveLength(1);
    expect(gatewayOffenders(at("inbound"), ["../http/server.js"])).toHaveLength(1);
    expect(gatewayOffenders(at("http"), ["../wiring/http.js"])).toHaveLength(1);
    expect(gatewayOffenders(path.join("src", "gateway", "metrics.ts"), ["./outbound/outbound.js"])).toHaveLength(1);
    // ... and a folder unknown to the rule is refused too, so a new folder must be placed in GATEWAY_FOLDERS.
    expect(gatewayOffenders(at("inbound"), ["../jobs/run.js"])).toHaveLength(1);
    // Down, sideways within a folder, and the wiring: allowed.
    expect(gatewayOffenders(at("http"), ["../inbound/gateway.js", "../outbound/outbound.js", "../contract.js", "./server.js", "../../log.js"])).toEqual([]);
    expect(gatewayOffenders(path.join("src", "gateway", "app.ts"), ["./http/server.js"])).toEqual([]);
    expect(gatewayOffenders(at("wiring"), ["../http/server.js", "../inbound/gateway.js", "../jobs/wire.js", "../tooling.js"])).toEqual([]);
  });

  it("the bench imports no vitest, not even through the test support it shares", () => {
    expect(files("bench").length).toBeGreaterThan(0);
    expect(vitestImporters(files("bench"))).toEqual([]);
  });

  it("the vitest check can fail: it follows imports into a file that uses vitest", () => {
    expect(vitestImporters([path.join("test", "support", "app.ts")])).toEqual([path.join("test", "support", "db.ts")]);
  });

  it("the adapter rule can fail: it sees an adapter reaching into the pipeline", () => {
    expect(ADAPTER_MAY_IMPORT.test("../../src/gateway/inbound/gateway.js")).toBe(false);
    expect(ADAPTER_MAY_IMPORT.test("../../src/runtime/runner.js")).toBe(false);
    expect(ADAPTER_MAY_IMPORT.test("../../src/gateway/format/chunk-text.js")).toBe(true);
    expect(ADAPTER_MAY_IMPORT.test("../../src/gateway/format/chunk-html.js")).toBe(true);
    expect(ADAPTER_MAY_IMPORT.test("../../src/gateway/outbound/outbound.js")).toBe(false);
    const sample = path.join("test", "fixtures-boundary-adapter.tmp.ts");
    fs.writeFileSync(sample, `import { Gateway } from "../src/gateway/inbound/gateway.js";\n`);
    try {
      expect(imports(sample).filter((i) => i.includes("/src/") && !ADAPTER_MAY_IMPORT.test(i))).toEqual(["../src/gateway/inbound/gateway.js"]);
    } finally {
      fs.rmSync(sample);
    }
  });
});

describe("the configuration's place (DESIGN.md Layers)", () => {
  it("src/config.ts and src/config/ import no layer: only their own files, src/errors.ts and src/validation-message.ts", () => {
    const config = CONFIG_FILES();
    expect(config.length).toBeGreaterThan(1);
    expect(config.flatMap((f) => configOffenders(f, imports(f)))).toEqual([]);
  });

  it("the configuration check can fail: it sees a planted import of src/gateway, of a layer and of the CLI", () => {
    const sample = path.join("test", "fixtures-boundary-config.tmp.ts");
    fs.writeFileSync(sample, `import { parseApiTokens } from "../src/gateway/http/api/tokens.js";\n`);
    try {
      // Read from a file as the check reads src/config's, and judged as if it lay in src/config/.
      const planted = imports(sample).map((i) => i.replace(/^\.\.\/src\//, "../"));
      expect(configOffenders(path.join("src", "config", "server.ts"), planted)).toEqual([
        `${path.join("src", "config", "server.ts")} -> ../gateway/http/api/tokens.js`,
      ]);
    } finally {
      fs.rmSync(sample);
    }
    const at = path.join("src", "config", "agent.ts");
    expect(configOffenders(at, ["../runtime/jobs/zone.js", "../store/db.js", "../cli.js", "../../adapters/index.js"])).toHaveLength(4);
    expect(configOffenders(path.join("src", "config.ts"), ["./gateway/app.js"])).toHaveLength(1);
    // Its own files and the shared modules: allowed.
    expect(configOffenders(at, ["./values.js", "../errors.js", "../validation-message.js", "../config.js"])).toEqual([]);
    expect(configOffenders(path.join("src", "config.ts"), ["./config/server.js", "./errors.js"])).toEqual([]);
  });
});

/**
 * One door out (issue 27): every platform call is an item on the outbound door, run inside the adapter's
 * OutboundScheduler, and the door's platform calls are this one file: nothing else under src/ calls an
 * AdapterSink method (contract.ts) reached through a `sink`.
 */
const SINK_CALLER = path.join("src", "gateway", "outbound", "sink-calls.ts");
const SINK_CALL =
  /\bsink\s*\??\.\s*(send|edit|typing|react|findSent|sendCard|sendCardPart|cardParts|editCard|leave)\s*(\?\.\s*)?(\(|\.\s*(bind|call|apply)\s*\()/;

/** The lines of `text` (the file's, unless given) that call an AdapterSink method, as `file:line: code`. */
function sinkCalls(file: string, text = fs.readFileSync(file, "utf8")): string[] {
  return text.split("\n").flatMap((line, i) => (SINK_CALL.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

describe("one door out: only the outbound door's platform calls reach an adapter's sink", () => {
  it(`no file under src/ but ${SINK_CALLER} calls an AdapterSink method`, () => {
    expect(
      files("src")
        .filter((f) => f !== SINK_CALLER)
        .flatMap((f) => sinkCalls(f)),
    ).toEqual([]);
    // ... and the one file that does is seen making them, so the rule matches real calls.
    expect(sinkCalls(SINK_CALLER).length).toBeGreaterThanOrEqual(8);
  });

  it("the sink rule can fail: it sees a planted sink call in a file, and in each way of making one", () => {
    const planted = path.join("test", "fixtures-boundary-sink.tmp.ts");
    fs.writeFileSync(planted, `export async function show(a, to, card) {\n  return (await a.sink.sendCard(to, card)).messageId;\n}\n`);
    try {
      expect(sinkCalls(planted)).toEqual([`${planted}:2: return (await a.sink.sendCard(to, card)).messageId;`]);
    } finally {
      fs.rmSync(planted);
    }
    for (const call of [
      "await adapter.sink.send(env.replyTo, text)",
      "a.adapter.sink.editCard?.(to, id, card)",
      "const { sink } = a; await sink.leave(chatId)",
      "sink.typing (to)",
      "const f = sink.findSent.bind(sink)",
      "adapter?.sink?.edit(to, id, text)",
    ])
      expect(sinkCalls("sample.ts", call), call).toHaveLength(1);
    // Asking whether a sink can do something, and the runtime's SinkRouter, are not sink calls.
    for (const other of [
      "if (!adapter.sink.leave) return false",
      "sink.findSent !== undefined",
      "void this.sinks.deliver(e.sessionId, e)",
      "outbound.sink(id, e)",
    ])
      expect(sinkCalls("sample.ts", other), other).toEqual([]);
  });
});

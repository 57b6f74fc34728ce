/**
 * Load before authentication, against a real `switchboard serve` process:
 *
 * - 1,000 concurrent connections, each trickling a 2 MB body to
 *   /slack/events (well-formed but forged signature headers, so the body is
 *   read before the signature fails) or /telegram/<id> (a wrong secret):
 *   RSS stays under idle + 150 MB and comes back after, /healthz answers
 *   within 1 s throughout, and a genuine signed Slack event sent in the
 *   middle is processed.
 * - Slow clients, one header byte every 5 s: cut by the header timeout; the
 *   connection cap holds (the excess is dropped at once); webhooks work.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type net from "node:net";
import os from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { report, sleep, until } from "./helpers.js";
import { connect, cpuSecondsOf, startEdgeGateway, type EdgeGateway } from "./http-edge.js";

const CONNECTIONS = 1000;
const BODY_BYTES = 2 * 1024 * 1024;
const WAVE_MS = 15_000;
const WAVES = Number(process.env.HTTP_LOAD_WAVES ?? 2);
/** Every connection sends this much at once, then TRICKLE_BYTES every TRICKLE_MS. */
const FIRST_BYTES = 32 * 1024;
const TRICKLE_BYTES = 4 * 1024;
const TRICKLE_MS = 250;
/** At most this many connections are opened in all (closed ones are replaced, once a second). */
const MAX_OPENED = 4000;

let edge: EdgeGateway | undefined;
const sockets = new Set<net.Socket>();
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
  await edge?.stop();
  edge = undefined;
});

const metric = async (base: string, name: string, label?: string): Promise<number> => {
  const text = await (await fetch(`${base}/metrics`)).text();
  let n = 0;
  for (const line of text.split("\n")) if (line.startsWith(name) && (!label || line.includes(label))) n += Number(line.split(" ").pop());
  return n;
};

const chunked = (n: number): Buffer => Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), Buffer.alloc(n, 0x20), Buffer.from("\r\n")]);

/**
 * /healthz timed from a process of its own: this test's process is busy
 * driving 1,000 sockets, and its event loop would add its own delays.
 */
function healthProbe(base: string, everyMs: number, forMs: number): { done: Promise<Array<{ at: number; ms: number; status: number }>>; proc: ChildProcess } {
  const script = `
    const out = []; const t0 = Date.now();
    (async () => {
      while (Date.now() - t0 < ${forMs}) {
        const s = performance.now();
        let status = 0;
        try { const r = await fetch(${JSON.stringify(base)} + "/healthz", { signal: AbortSignal.timeout(5000), headers: { connection: "close" } }); await r.text(); status = r.status; } catch {}
        out.push({ at: Date.now() - t0, ms: Math.round(performance.now() - s), status });
        await new Promise((r) => setTimeout(r, ${everyMs}));
      }
      process.stdout.write(JSON.stringify(out));
    })();`;
  const proc = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  let text = "";
  proc.stdout!.on("data", (d) => (text += d));
  return {
    proc,
    done: new Promise((resolve, reject) =>
      proc.once("exit", () => {
        try {
          resolve(JSON.parse(text));
        } catch (e) {
          reject(e);
        }
      }),
    ),
  };
}

/** One wave: CONNECTIONS connections opened first, then all trickling at once; closed ones replaced a second later. */
async function attackWave(e: EdgeGateway, idleMb: number) {
  let opened = 0;
  let attacking = true;
  const statuses: Record<string, number> = {};
  const sent = new Map<net.Socket, number>();
  const isChunked = new WeakSet<net.Socket>();
  const before = {
    precheck: await metric(e.base, "switchboard_http_refused_total", 'reason="precheck"'),
    bodies: await metric(e.base, "switchboard_http_refused_total", 'reason="body-'),
  };
  const open = async (): Promise<net.Socket | undefined> => {
    if (!attacking || opened >= MAX_OPENED) return undefined;
    opened++;
    try {
      const s = await connect(e.port);
      sockets.add(s);
      s.on("error", () => undefined);
      return s;
    } catch {
      return undefined;
    }
  };
  const begin = (s: net.Socket, slack: boolean) => {
    // Slack's bodies go chunked (no length to refuse up front: the server must count); Telegram's declare 2 MB.
    s.write(
      slack
        ? `POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Slack-Request-Timestamp: ${Math.floor(Date.now() / 1000)}\r\nX-Slack-Signature: v0=${"ab".repeat(32)}\r\n\r\n`
        : `POST ${e.hookPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${BODY_BYTES}\r\nX-Telegram-Bot-Api-Secret-Token: not-the-secret\r\n\r\n`,
    );
    s.write(slack ? chunked(FIRST_BYTES) : Buffer.alloc(FIRST_BYTES, 0x20));
    if (slack) isChunked.add(s);
    sent.set(s, FIRST_BYTES);
    let seen = "";
    s.on("data", (d) => {
      if (seen.length >= 64) return;
      seen += d.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(seen);
      if (m) statuses[m[1]!] = (statuses[m[1]!] ?? 0) + 1;
    });
    s.on("close", () => {
      sockets.delete(s);
      sent.delete(s);
      // A closed connection is replaced a second later, so the pressure stays on.
      if (attacking) setTimeout(() => void open().then((n) => n && begin(n, slack)), 1000);
    });
  };
  const t0 = Date.now();
  const cpu0 = cpuSecondsOf(e.g.child.pid!);
  const first = (await Promise.all(Array.from({ length: CONNECTIONS }, () => open()))).filter((x): x is net.Socket => x !== undefined);
  const openAtOnce = first.filter((s) => !s.destroyed).length;
  first.forEach((s, i) => begin(s, i % 2 === 0));
  const connectMs = Date.now() - t0;
  const chunk = Buffer.alloc(TRICKLE_BYTES, 0x20);
  const chunkedTrickle = chunked(TRICKLE_BYTES);
  const trickle = setInterval(() => {
    for (const [s, n] of sent) {
      if (n >= BODY_BYTES || s.destroyed || s.writableNeedDrain) continue;
      s.write(isChunked.has(s) ? chunkedTrickle : chunk);
      sent.set(s, n + TRICKLE_BYTES);
    }
  }, TRICKLE_MS);
  let peakMb = e.rssMb();
  const rss = setInterval(() => {
    try {
      peakMb = Math.max(peakMb, e.rssMb());
    } catch {
      // the process is gone: the assertions say so
    }
  }, 200);
  const probe = healthProbe(e.base, 250, WAVE_MS);
  let genuine: { status: number; ms: number } | undefined;
  let probes: Array<{ at: number; ms: number; status: number }> = [];
  try {
    await sleep(WAVE_MS / 2);
    genuine = await e.slackRoundTrip("genuine slack during the load", 15_000);
    probes = await probe.done;
  } finally {
    attacking = false;
    probe.proc.kill();
    clearInterval(trickle);
    for (const s of sockets) s.destroy();
    sockets.clear();
    clearInterval(rss);
  }
  // How much of a core the gateway used over the wave: low, it was waiting for a CPU, not busy.
  const gatewayCores = Number(((cpuSecondsOf(e.g.child.pid!) - cpu0) / ((Date.now() - t0) / 1000)).toFixed(2));
  // The server's own event-loop delay over the wave (prom-client resets it at each scrape; the last was at the wave's start).
  const loopMaxMs = Math.round((await metric(e.base, "switchboard_nodejs_eventloop_lag_max_seconds")) * 1000);
  const refusedPrecheck = (await metric(e.base, "switchboard_http_refused_total", 'reason="precheck"')) - before.precheck;
  const refusedBodies = (await metric(e.base, "switchboard_http_refused_total", 'reason="body-')) - before.bodies;
  await until(async () => (await metric(e.base, "switchboard_http_connections")) <= 2, 15_000, "connections to close");
  // V8 and malloc give memory back in their own time: wait for it, bounded.
  const t1 = Date.now();
  await until(() => e.rssMb() < idleMb + 50, 15_000, "RSS to come back");
  const afterMb = e.rssMb();
  const health = probes.map((p) => p.ms).sort((a, b) => a - b);
  return {
    gatewayCores,
    loopMaxMs,
    openAtOnce,
    connectMs,
    opened,
    statuses,
    peakMb: Math.round(peakMb),
    afterMb: Math.round(afterMb),
    settleMs: Date.now() - t1,
    healthChecks: probes.length,
    healthFailures: probes.filter((p) => p.status !== 200).length,
    healthMaxMs: health.at(-1) ?? NaN,
    healthP50Ms: health[Math.floor(health.length / 2)] ?? NaN,
    healthP90Ms: health[Math.floor(health.length * 0.9)] ?? NaN,
    loadavg: os.loadavg()[0]!.toFixed(1),
    healthSlow: probes
      .filter((p) => p.ms > 250)
      .map((p) => `${(p.at / 1000).toFixed(1)}s:${p.ms}ms`)
      .join(" "),
    genuine,
    refusedPrecheck,
    refusedBodies,
  };
}

describe("HTTP load before authentication", () => {
  it(`${CONNECTIONS} connections trickling 2 MB bodies: RSS bounded, /healthz within 1 s, a genuine Slack event processed`, async () => {
    edge = await startEdgeGateway({ CONSOLE_ENABLED: "true" });
    const e = edge;
    await e.slackRoundTrip("warm up");
    await e.telegramRoundTrip("warm up");
    await sleep(1000);
    const idleMb = e.rssMb();

    const waves = [];
    for (let w = 1; w <= WAVES; w++) waves.push(await attackWave(e, idleMb));
    const after = await e.slackRoundTrip("genuine slack after the load");
    report("http-load", { connections: CONNECTIONS, idleMb: Math.round(idleMb), waves, after });
    for (const wave of waves) {
      expect(wave.openAtOnce).toBe(CONNECTIONS);
      expect(wave.peakMb).toBeLessThan(idleMb + 150);
      expect(wave.afterMb).toBeLessThan(idleMb + 150);
      // Timing holds only on a machine with room: with the cores oversubscribed by other runs the process
      // waits for a CPU, whatever it does. Then the figures are reported (loadavg included), not asserted.
      if (Number(wave.loadavg) < os.cpus().length * 2) {
        // The gateway's own event loop never stalled anywhere near 1 s, and /healthz answered within 1 s (p90, timed from another process).
        expect(wave.healthChecks).toBeGreaterThanOrEqual(5);
        expect(wave.healthFailures).toBe(0);
        expect(wave.loopMaxMs).toBeLessThan(1000);
        expect(wave.healthP90Ms).toBeLessThan(1000);
      } else {
        console.log(
          `http-load: timing not asserted: load average ${wave.loadavg} on ${os.cpus().length} cores (other runs share the machine); event-loop delay max ${wave.loopMaxMs} ms, /healthz p50 ${wave.healthP50Ms} ms`,
        );
        expect(wave.healthChecks - wave.healthFailures).toBeGreaterThan(0);
      }
      expect(wave.genuine?.status).toBe(200);
      expect(wave.refusedPrecheck).toBeGreaterThan(0);
      expect(wave.refusedBodies).toBeGreaterThan(0);
    }
    // What one wave leaves behind, the next does not add to: the memory is reused, not leaked. A single
    // RSS sample after a wave depends on when V8 last collected, so the next wave is held to the most the
    // process ever held in the first one (a leak of the refused bodies would climb past it).
    for (let w = 1; w < waves.length; w++) expect(waves[w]!.afterMb).toBeLessThan(waves[0]!.peakMb + 30);
    expect(after.status).toBe(200);
    expect(e.g.child.exitCode).toBeNull();
  });
});

describe("HTTP slow clients", () => {
  it("one header byte every 5 s: cut by the header timeout; the connection cap holds; webhooks keep working", async () => {
    const CAP = 200;
    edge = await startEdgeGateway({ CONSOLE_ENABLED: "false", HTTP_MAX_CONNECTIONS: String(CAP), HTTP_HEADERS_TIMEOUT: "10s" });
    const e = edge;
    const request = "POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    const slow: Array<{ s: net.Socket; openedAt: number; closedAt?: number; answer: string }> = [];
    const openSlow = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const s = await connect(e.port);
        sockets.add(s);
        const c = { s, openedAt: Date.now(), answer: "" as string, closedAt: undefined as number | undefined };
        s.on("data", (d) => (c.answer += d.toString("latin1")));
        s.on("error", () => undefined);
        s.on("close", () => {
          c.closedAt = Date.now();
          sockets.delete(s);
        });
        s.write(request[0]!);
        slow.push(c);
      }
    };
    let pos = 1;
    const drip = setInterval(() => {
      for (const c of slow) if (c.closedAt === undefined) c.s.write(request[pos % request.length]!);
      pos++;
    }, 5_000);
    try {
      // Under the cap: webhooks work while the slow ones hang on.
      await openSlow(CAP - 50);
      const during = { slack: await e.slackRoundTrip("during slow clients"), telegram: await e.telegramRoundTrip("during slow clients") };
      // Over the cap: the excess is dropped at once.
      await openSlow(150);
      const dropped = await until(
        async () => (await metric(e.base, "switchboard_http_refused_total", 'reason="connections"').catch(() => 0)) >= 40,
        20_000,
        "dropped connections",
      );
      // Everyone still open is cut by the header timeout (10 s, checked every second).
      const allCut = await until(() => slow.every((c) => c.closedAt !== undefined), 40_000, "slow clients to be cut");
      const lifetimes = slow.map((c) => (c.closedAt ?? Date.now()) - c.openedAt).sort((a, b) => a - b);
      const timedOut = slow.filter((c) => /^HTTP\/1\.1 408/.test(c.answer)).length;
      const refusedConnections = await metric(e.base, "switchboard_http_refused_total", 'reason="connections"');
      const after = { slack: await e.slackRoundTrip("after slow clients"), telegram: await e.telegramRoundTrip("after slow clients") };
      report("http-slow-clients", {
        cap: CAP,
        slowClients: slow.length,
        timedOut408: timedOut,
        refusedConnections,
        longestMs: lifetimes.at(-1),
        shortestMs: lifetimes[0],
        during,
        after,
      });
      expect(dropped).toBe(true);
      expect(allCut).toBe(true);
      expect(refusedConnections).toBeGreaterThanOrEqual(slow.length - CAP);
      // The held ones were cut by the timeout, and got told so.
      expect(timedOut).toBeGreaterThanOrEqual(CAP - 60);
      expect(lifetimes.at(-1)!).toBeLessThan(30_000);
      expect(during.slack.status).toBe(200);
      expect(after.slack.status).toBe(200);
      expect(after.telegram.status).toBe(200);
    } finally {
      clearInterval(drip);
    }
  });
});

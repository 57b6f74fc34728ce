/**
 * Plumbing for the HTTP-edge scenarios: a real `switchboard serve` process
 * with Slack (Events API over HTTP), Telegram (webhook) and the console, on
 * the platform fakes; raw TCP clients (node:net, so malformed bytes reach the
 * server as written); and the process's RSS from /proc.
 */
import fs from "node:fs";
import net from "node:net";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { freshDatabaseUrl } from "../support/db.js";
import { freePort } from "../../tools/pg-cluster.js";
import { startGatewayProcess, stopGatewayProcess, type GatewayProcess } from "./multiprocess-gateways.js";
import { sleep, until } from "./helpers.js";

export const WEBHOOK_SECRET = "edge_Secret-7";

export interface EdgeGateway {
  g: GatewayProcess;
  port: number;
  base: string;
  sl: FakeSlack;
  tg: FakeTelegram;
  hookPath: string;
  /** A genuine signed Slack DM event; resolves with the reply once the fake received it. */
  slackRoundTrip(text: string, timeoutMs?: number): Promise<{ status: number; ms: number }>;
  /** A genuine Telegram webhook update (with the secret); resolves once the reply arrived. */
  telegramRoundTrip(text: string, timeoutMs?: number): Promise<{ status: number; ms: number }>;
  rssMb(): number;
  stop(): Promise<void>;
}

export async function startEdgeGateway(env: Record<string, string> = {}): Promise<EdgeGateway> {
  const sl = new FakeSlack();
  await sl.start();
  const tg = new FakeTelegram();
  await tg.start();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const hookPath = `/telegram/${tg.botUser.id}`;
  const g = await startGatewayProcess(
    0,
    port,
    {
      DATABASE_URL: await freshDatabaseUrl("sqlite"),
      DM_POLICY: "open",
      LOG_LEVEL: "warn",
      REFLECT_EVERY_TURNS: "0",
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      TELEGRAM_MODE: "webhook",
      TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
      TELEGRAM_WEBHOOK_URL: `${base}${hookPath}`,
      SLACK_BOT_TOKEN: sl.botToken,
      SLACK_SIGNING_SECRET: sl.signingSecret,
      SLACK_API_URL: sl.apiUrl,
      ...env,
    },
    [tg.token, WEBHOOK_SECRET, sl.botToken, sl.signingSecret],
  );
  const alice = tg.user("Alice");
  const dm = tg.privateChat(alice);
  let n = 0;
  return {
    g,
    port,
    base,
    sl,
    tg,
    hookPath,
    async slackRoundTrip(text, timeoutMs = 20_000) {
      const t0 = Date.now();
      const tagged = `${text} #${++n}`;
      const d = await sl.postEvent(`${base}/slack/events`, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: tagged }));
      if (!(await until(() => sl.sent({ channel: "D0DM0001" }).some((m) => m.text.includes(tagged)), timeoutMs, "")))
        throw new Error(`no Slack reply to "${tagged}" within ${timeoutMs} ms (the event got ${d.status})`);
      return { status: d.status, ms: Date.now() - t0 };
    },
    async telegramRoundTrip(text, timeoutMs = 20_000) {
      const t0 = Date.now();
      const tagged = `${text} #${++n}`;
      const d = await tg.deliverWebhook(`${base}${hookPath}`, tg.build.message({ chat: dm, from: alice, text: tagged }), WEBHOOK_SECRET);
      if (!(await until(() => tg.sent({ chatId: dm.id }).some((m) => m.text.includes(tagged)), timeoutMs, "")))
        throw new Error(`no Telegram reply to "${tagged}" within ${timeoutMs} ms (the update got ${d.status})`);
      return { status: d.status, ms: Date.now() - t0 };
    },
    rssMb: () => rssMbOf(g.child.pid!),
    async stop() {
      await stopGatewayProcess(g);
      await sl.close();
      await tg.close();
    },
  };
}

/** CPU seconds (user + system) the process has used, from /proc (clock ticks of 1/100 s). */
export function cpuSecondsOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function rssMbOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return kb / 1024;
}

export interface RawResult {
  /** The status code of the first response, if one arrived. */
  status?: number;
  /** Everything the server sent (latin1), cut at 64 KB. */
  text: string;
  /** How the connection ended. */
  end: "closed" | "reset" | "timeout";
}

/**
 * Writes `chunks` on a fresh connection (a number is a pause in ms) and
 * collects the answer until the server closes or `timeoutMs` passes.
 * `closeAfterWrite` half-closes (or with "destroy", drops) the connection
 * after the last chunk: an early close.
 */
export function rawRequest(
  port: number,
  chunks: Array<string | Buffer | number>,
  o: { timeoutMs?: number; closeAfterWrite?: "end" | "destroy"; untilStatus?: boolean } = {},
): Promise<RawResult> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    let text = "";
    let done = false;
    const finish = (end: RawResult["end"]) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ ...(m ? { status: Number(m[1]) } : {}), text, end });
    };
    const timer = setTimeout(() => finish("timeout"), o.timeoutMs ?? 5_000);
    s.on("data", (d) => {
      if (text.length < 65_536) text += d.toString("latin1");
      // Enough for callers that only need the status line and headers.
      if (o.untilStatus && text.includes("\r\n\r\n")) finish("closed");
    });
    s.on("error", (e: NodeJS.ErrnoException) => finish(e.code === "ECONNRESET" || e.code === "EPIPE" ? "reset" : "closed"));
    s.on("close", () => finish("closed"));
    void (async () => {
      for (const c of chunks) {
        if (done) return;
        if (typeof c === "number") await sleep(c);
        else if (!s.write(c)) await new Promise((r) => s.once("drain", r));
      }
      if (o.closeAfterWrite === "end") s.end();
      if (o.closeAfterWrite === "destroy") finish("closed");
    })().catch(() => finish("reset"));
  });
}

/** A connected socket held open by the caller (load and slow-client scenarios). */
export function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

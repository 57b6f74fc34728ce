/**
 * OpenClaw as a peer: installed on demand, once, into the git-ignored
 * bench/.peers/ (never a dependency: it is hundreds of MB and wants Node 24,
 * which the npm `node` package provides), run as `openclaw gateway run` on
 * Node 24 with its Telegram channel in webhook mode on the bench's fake and a
 * fake OpenAI-compatible model. Anything that keeps it from running is a
 * `{ skipped }` with the reason, never a failed bench.
 */
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { FakeOpenAi, textReply } from "../../test/fakes/openai.js";
import { freePort } from "../../tools/pg-cluster.js";
import { ROOT, sleep } from "../lib/child.js";
import { BENCH_TELEGRAM_SECRET, type PlatformDriver } from "../lib/platforms.js";
import type { PeerSystem, RunningSystem } from "./systems.js";

export const OPENCLAW_VERSION = "2026.9.6";
export const NODE24_VERSION = "24.21.0";
export type Skipped = { key: PeerSystem["key"]; skipped: string };

const CACHE = path.join(ROOT, "bench/.peers");
const INSTALL_TIMEOUT_MS = 10 * 60_000;
/** OpenClaw's start is tens of seconds (issue 31 saw 19-53 s); past this it is skipped. */
const START_TIMEOUT_MS = 180_000;

/** `npm install <spec>` into `dir` unless it is there at that version; the installed package's folder. */
function installOnce(dir: string, name: string, version: string, extra: string[]): string {
  const pkg = path.join(dir, "node_modules", name);
  const installed = (() => {
    try {
      return (JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")) as { version?: string }).version;
    } catch {
      return undefined; // not installed yet
    }
  })();
  if (installed === version) return pkg;
  process.stderr.write(`peers: installing ${name}@${version} into ${path.relative(ROOT, dir)} (once)…\n`);
  fs.mkdirSync(dir, { recursive: true });
  execFileSync("npm", ["install", "--prefix", dir, "--no-save", "--no-audit", "--no-fund", "--loglevel=error", ...extra, `${name}@${version}`], {
    stdio: ["ignore", "ignore", "inherit"],
    timeout: INSTALL_TIMEOUT_MS,
  });
  return pkg;
}

/**
 * A model that answers `echo: m openclaw-…`, the bench's last message as it
 * went in, wherever OpenClaw put it in its prompt (its last user turn holds
 * an envelope, the text is elsewhere in the conversation).
 */
export async function taggedEchoModel(): Promise<FakeOpenAi> {
  const model = await FakeOpenAi.start();
  model.responder = (body: { messages: unknown[] }) => {
    const tags = JSON.stringify(body.messages).match(/m openclaw-[\w-]+/g);
    return textReply(["echo: ", tags?.at(-1) ?? "?"]);
  };
  return model;
}

function openClawConfig(d: PlatformDriver, home: string, hookPort: number, modelBaseUrl: string): unknown {
  const env = d.env();
  const hookPath = `/telegram/${env.TELEGRAM_BOT_TOKEN!.split(":")[0]}`;
  return {
    gateway: { mode: "local" },
    // Its default is a shared /tmp/openclaw/: the run's own folder is removed with it.
    logging: { file: path.join(home, "openclaw.log") },
    agents: { defaults: { model: { primary: "bench/fake-model" } } },
    // A session per private chat, as Switchboard has (its default shares one main session among all DMs).
    session: { dmScope: "per-channel-peer" },
    models: {
      mode: "merge",
      providers: {
        bench: {
          baseUrl: modelBaseUrl,
          apiKey: "bench",
          api: "openai-completions",
          models: [
            {
              id: "fake-model",
              name: "Fake model",
              reasoning: false,
              input: ["text"],
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
              contextWindow: 128000,
              maxTokens: 1024,
            },
          ],
        },
      },
    },
    channels: {
      telegram: {
        enabled: true,
        botToken: env.TELEGRAM_BOT_TOKEN,
        apiRoot: env.TELEGRAM_API_ROOT,
        network: { dangerouslyAllowPrivateNetwork: true },
        dmPolicy: "open",
        allowFrom: ["*"],
        groupPolicy: "open",
        groups: { "*": { requireMention: false } },
        streaming: { mode: "off" },
        webhookUrl: `http://127.0.0.1:${hookPort}${hookPath}`,
        webhookSecret: BENCH_TELEGRAM_SECRET,
        webhookPath: hookPath,
        webhookHost: "127.0.0.1",
        webhookPort: hookPort,
      },
    },
  };
}

/**
 * OpenClaw, or why it cannot run: skipped with --smoke (the schema test stays
 * fast and offline) and with BENCH_PEERS_OPENCLAW=0; installs Node 24 and
 * OpenClaw on first use.
 */
export function openClaw(smoke: boolean, modelBaseUrl: () => string): PeerSystem | Skipped {
  const key = "openclaw" as const;
  if (smoke) return { key, skipped: "not in --smoke runs" };
  if (process.env.BENCH_PEERS_OPENCLAW === "0") return { key, skipped: "BENCH_PEERS_OPENCLAW=0" };
  let node: string;
  let entry: string;
  try {
    node = path.join(installOnce(path.join(CACHE, "node24"), "node", NODE24_VERSION, []), "bin/node");
    // Its postinstall only stages bundled plugins' extra dependencies; the Telegram channel needs none.
    entry = path.join(installOnce(path.join(CACHE, "openclaw"), "openclaw", OPENCLAW_VERSION, ["--ignore-scripts"]), "openclaw.mjs");
    execFileSync(node, ["--version"], { timeout: 30_000 });
  } catch (err) {
    return {
      key,
      skipped: `could not install Node ${NODE24_VERSION} or openclaw@${OPENCLAW_VERSION}: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`,
    };
  }
  return {
    key,
    label: `OpenClaw ${OPENCLAW_VERSION} (Node ${NODE24_VERSION}, a fake model)`,
    // Issue 31 saw about 2 msgs/s at 0.5 s of CPU each: a short unpaced run, nothing at 50 msgs/s, no 2,000 chats.
    reduced: { messages: 40 },
    async start(d): Promise<RunningSystem> {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), "bench-openclaw-"));
      const hookPort = await freePort();
      const gatewayPort = await freePort();
      const config = path.join(home, "openclaw.json");
      fs.writeFileSync(config, JSON.stringify(openClawConfig(d, home, hookPort, modelBaseUrl()), null, 2));
      const child = spawn(node, [entry, "gateway", "run", "--allow-unconfigured", "--port", String(gatewayPort), "--bind", "loopback", "--auth", "none"], {
        cwd: home,
        env: {
          PATH: `${path.dirname(node)}:${process.env.PATH ?? ""}`,
          HOME: home,
          OPENCLAW_HOME: home,
          OPENCLAW_STATE_DIR: path.join(home, "state"),
          OPENCLAW_CONFIG_PATH: config,
          OPENCLAW_NO_ONBOARD: "1",
          OPENCLAW_SKIP_ONBOARDING: "1",
          OPENCLAW_NO_RESPAWN: "1",
        },
        stdio: ["ignore", process.env.BENCH_PEERS_OPENCLAW_LOG ? "inherit" : "ignore", process.env.BENCH_PEERS_OPENCLAW_LOG ? "inherit" : "ignore"],
      });
      child.once("exit", () => fs.rmSync(home, { recursive: true, force: true }));
      const url = `http://127.0.0.1:${hookPort}`;
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (;;) {
        if (child.exitCode !== null) throw new Error(`openclaw gateway exited with ${child.exitCode} before its webhook listened`);
        if (Date.now() > deadline) {
          child.kill("SIGKILL");
          throw new Error(`openclaw's webhook did not listen in ${START_TIMEOUT_MS / 1000} s`);
        }
        const up = await fetch(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
        if (up) return { child, url };
        await sleep(100);
      }
    },
  };
}

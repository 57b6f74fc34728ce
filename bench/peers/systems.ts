/**
 * The systems the peers scenario puts side by side, each started in its own
 * process on the same fake Telegram API in webhook mode: the plain grammY bot,
 * the Chat SDK bot (bench/peers/*-bot.mjs, plain Node), and Switchboard's
 * compiled gateway as `npm start` runs it (Telegram only, SQLite), with the
 * echo agent or a fake OpenAI-compatible model. OpenClaw is in openclaw.ts.
 */
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort } from "../../tools/pg-cluster.js";
import { forkGateway, ROOT } from "../lib/child.js";
import type { PlatformDriver } from "../lib/platforms.js";

/** A started system: its process, and the base URL the fake's webhook is pointed at. */
export interface RunningSystem {
  child: ChildProcess;
  url: string;
}

export interface PeerSystem {
  readonly key: "grammy" | "chat_sdk" | "switchboard_echo" | "switchboard_model" | "openclaw";
  readonly label: string;
  /** A system too slow for the full scale: one unpaced round of `messages` chats, no paced run, no RSS after all chats. */
  readonly reduced?: { messages: number };
  /** Spawns the system and resolves once it takes webhooks (a peer's port is open; Switchboard's /healthz says ready). */
  start(d: PlatformDriver): Promise<RunningSystem>;
}

/** Forks one of the peer bots with the fake's token, API root and webhook secret; resolves when it says it listens. */
async function forkPeerBot(script: string, d: PlatformDriver): Promise<RunningSystem> {
  const port = await freePort();
  const env = d.env();
  const child = fork(fileURLToPath(new URL(script, import.meta.url)), [], {
    cwd: ROOT,
    env: { ...process.env, ...env, PEER_PORT: String(port) },
    // BENCH_PEER_NODE_FLAGS (as BENCH_GATEWAY_NODE_FLAGS for Switchboard's), e.g. "--cpu-prof --cpu-prof-dir=/tmp/p" to see where a peer's time goes.
    execArgv: [...process.execArgv, ...(process.env.BENCH_PEER_NODE_FLAGS?.split(" ").filter(Boolean) ?? [])],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${script} did not listen in 60 s`)), 60_000);
    child.once("message", () => {
      clearTimeout(t);
      resolve();
    });
    child.once("exit", (code) => {
      clearTimeout(t);
      reject(new Error(`${script} exited with ${code}`));
    });
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

export const grammyPlain: PeerSystem = {
  key: "grammy",
  label: "grammY, plain bot, no storage",
  start: (d) => forkPeerBot("./grammy-bot.mjs", d),
};

export const chatSdk: PeerSystem = {
  key: "chat_sdk",
  label: "Vercel Chat SDK (memory state)",
  start: (d) => forkPeerBot("./chat-sdk-bot.mjs", d),
};

/**
 * Switchboard's compiled gateway, Telegram by webhook, on `databaseUrl`
 * (SQLite), its declared rate limits lifted (BENCH_LIFT_LIMITS=1: the peers
 * have no limiter and the fake never rate-limits), groups answered without a
 * mention as the peers answer them; `modelEnv` points its agent at a model.
 */
export function switchboard(key: "switchboard_echo" | "switchboard_model", databaseUrl: string, modelEnv: Record<string, string> = {}): PeerSystem {
  return {
    key,
    label: key === "switchboard_echo" ? "Switchboard, echo agent" : "Switchboard, a fake OpenAI-compatible model",
    start: (d) =>
      forkGateway(
        {
          DATABASE_URL: databaseUrl,
          LOG_LEVEL: "silent",
          DM_POLICY: "open",
          GROUP_REQUIRE_MENTION: "false",
          BENCH_LIFT_LIMITS: "1",
          ...d.env(),
          ...modelEnv,
        },
        { compiled: true },
      ),
  };
}

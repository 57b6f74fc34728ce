import type { Config } from "../config.js";
import { call, fail, hostOf, pass, remoteMessage, Unreachable, type CheckResult } from "./check.js";

/** Application flags (Discord: Application Object → Application Flags). */
export const GATEWAY_MESSAGE_CONTENT = 1 << 18;
export const GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 19;

const TOKEN_FIX = "Developer Portal → your application → Bot → Reset Token, and put the new token in DISCORD_BOT_TOKEN.";

/** Discord: the token (GET /users/@me) and the Message Content intent (the application's flags). */
export async function checkDiscord(config: Config, timeoutMs: number): Promise<CheckResult[]> {
  const base = `${config.DISCORD_API_URL ?? "https://discord.com/api"}/v10`;
  const headers = { authorization: `Bot ${config.DISCORD_BOT_TOKEN}` };
  const out: CheckResult[] = [];
  try {
    const me = await call(`${base}/users/@me`, { headers, timeoutMs });
    if (me.status === 401) return [fail("discord.token", "Discord bot token", `Discord refused the token (401 ${remoteMessage(me.body)}).`, TOKEN_FIX)];
    if (me.status !== 200)
      return [
        fail(
          "discord.token",
          "Discord bot token",
          `GET /users/@me answered ${me.status}: ${remoteMessage(me.body)}.`,
          "Try again; if it persists, check DISCORD_API_URL.",
        ),
      ];
    const u = me.body as { id: string; username?: string; bot?: boolean };
    out.push(pass("discord.token", "Discord bot token", `bot ${u.username ?? "?"} (id ${u.id}), ${me.ms} ms.`));

    const app = await call(`${base}/applications/@me`, { headers, timeoutMs });
    if (app.status !== 200) {
      out.push(
        fail(
          "discord.intent",
          "Discord Message Content intent",
          `GET /applications/@me answered ${app.status}: ${remoteMessage(app.body)}.`,
          "Try again; the intent cannot be checked without it.",
        ),
      );
      return out;
    }
    const flags = Number((app.body as { flags?: number }).flags ?? 0);
    if (flags & (GATEWAY_MESSAGE_CONTENT | GATEWAY_MESSAGE_CONTENT_LIMITED)) {
      out.push(
        pass(
          "discord.intent",
          "Discord Message Content intent",
          `enabled (${flags & GATEWAY_MESSAGE_CONTENT ? "approved, 100+ servers" : "under 100 servers"}).`,
        ),
      );
    } else {
      out.push(
        fail(
          "discord.intent",
          "Discord Message Content intent",
          "The application does not have the Message Content intent: Discord refuses the gateway login (close 4014, disallowed intents), and guild messages would arrive without text.",
          "Developer Portal → your application → Bot → Privileged Gateway Intents → turn on Message Content Intent, then save (bots in 100+ servers need Discord's approval).",
        ),
      );
    }
  } catch (e) {
    if (!(e instanceof Unreachable)) throw e;
    out.push(
      fail(
        "discord.token",
        "Discord bot token",
        `The Discord API at ${hostOf(base)} could not be reached: ${e.message}.`,
        "Check the network (outbound HTTPS to discord.com) or DISCORD_API_URL.",
      ),
    );
  }
  return out;
}

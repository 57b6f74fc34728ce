/**
 * discord.js REST errors -> AdapterError.
 *
 * 429s never get here: discord.js's REST queue owns Discord's per-route
 * buckets (they are keyed by headers only it sees) and waits out every 429
 * itself, so a rate-limited call just resolves later. Throwing RateLimited
 * as well would retry the same call in two places. What does reach us is a
 * refusal (Rejected) or a failure that may pass (Transient, which the
 * gateway's scheduler retries with backoff).
 *
 * Messages carry the route, status and Discord's code and wording, never the
 * payload (user text) or the URL of a webhook call (it holds the interaction
 * token).
 */
import { DiscordAPIError, HTTPError, RateLimitError } from "discord.js";
import { AdapterError } from "../types.js";

/** Discord error codes with a specific fix worth spelling out. */
const HINTS: Record<number, string> = {
  10003: "the channel does not exist or the bot cannot see it",
  10008: "the message no longer exists",
  10062: "the interaction expired (answer within 3 s, follow up within 15 min)",
  50001: "the bot has no access to the channel",
  50005: "the bot can only edit its own messages",
  50007: "the user does not accept DMs from the bot",
  50013: "the bot lacks a permission there (Send Messages, Read Message History, Add Reactions)",
  50035: "Discord rejected the request body (too long, bad reference)",
};

export function toAdapterError(err: unknown, what: string): AdapterError {
  if (err instanceof AdapterError) return err;
  if (err instanceof RateLimitError)
    return new AdapterError("discord", "RateLimited", `Discord ${what} was rate limited for ${err.retryAfter} ms`, err.retryAfter, { cause: err });
  if (err instanceof DiscordAPIError) {
    const code = typeof err.code === "number" ? err.code : Number(err.code);
    const base = `Discord ${what} failed (${err.status}, code ${String(err.code)}: ${err.message})`;
    if (err.status >= 500) return new AdapterError("discord", "Transient", `${base}: Discord's servers had a problem; retrying may succeed`);
    if (err.status === 401) return new AdapterError("discord", "Rejected", `${base}: Discord does not accept the bot token; check DISCORD_BOT_TOKEN`);
    if (code === 50035 && /content/i.test(err.message) && /BASE_TYPE_MAX_LENGTH|or fewer in length/i.test(err.message))
      return new AdapterError("discord", "Rejected", `${base}: the content is over Discord's 2000 characters; it is split and sent again`, undefined, {
        reason: "too-long",
      });
    const hint = HINTS[code];
    return new AdapterError("discord", "Rejected", `${base}: ${hint ?? "the request was refused and will not succeed if repeated"}`);
  }
  if (err instanceof HTTPError) {
    if (err.status >= 500 || err.status === 408)
      return new AdapterError("discord", "Transient", `Discord ${what} failed with HTTP ${err.status}; retrying may succeed`);
    return new AdapterError("discord", "Rejected", `Discord ${what} failed with HTTP ${err.status}`);
  }
  // fetch failures (ECONNREFUSED, reset, abort on timeout): the network, not the request.
  return new AdapterError("discord", "Transient", `Discord ${what} failed: ${innerName(err)}; check network access to Discord`);
}

function innerName(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code ?? (e.cause as { code?: unknown } | undefined)?.code;
    return typeof code === "string" ? `${e.name} ${code}` : e.name;
  }
  return typeof e;
}

/**
 * WebClient errors -> AdapterError. The gateway's OutboundScheduler is the one
 * retry mechanism (src/gateway/outbound/scheduler.ts), so the WebClient runs with
 * `retryConfig: { retries: 0 }` and `rejectRateLimitedCalls: true`, and a 429
 * surfaces here as slack_webapi_rate_limited_error with retryAfter seconds.
 *
 * Errors are matched on their `code` string rather than instanceof, so a
 * second copy of @slack/web-api in node_modules cannot break the mapping.
 * Messages name the method and Slack's error code, never the payload (it
 * holds the user's text) or the token.
 */
import { AdapterError } from "../types.js";

/** Platform errors that are Slack having a bad moment, not a refusal. */
const TRANSIENT_PLATFORM = new Set(["internal_error", "fatal_error", "service_unavailable", "request_timeout", "team_added_to_org"]);

const HINTS: Record<string, string> = {
  channel_not_found: "the channel does not exist or the bot cannot see it; invite the bot or check the channel id",
  not_in_channel: "the bot is not a member of the channel; invite it with /invite @bot",
  is_archived: "the channel is archived",
  msg_too_long: "the message is too long; it is split and sent again",
  no_text: "the message is empty",
  message_not_found: "the message to edit or react to no longer exists",
  cant_update_message: "only the bot's own messages can be edited",
  invalid_auth: "Slack does not accept the bot token; check SLACK_BOT_TOKEN",
  not_authed: "no bot token was sent; check SLACK_BOT_TOKEN",
  token_revoked: "the bot token was revoked; reinstall the app and update SLACK_BOT_TOKEN",
  account_inactive: "the bot token belongs to a deactivated app or workspace",
  missing_scope: "the app lacks an OAuth scope for this call; add it in the app settings and reinstall",
};

export function toAdapterError(err: unknown, method: string): AdapterError {
  if (err instanceof AdapterError) return err;
  const e = (typeof err === "object" && err !== null ? err : {}) as {
    code?: unknown;
    retryAfter?: unknown;
    data?: { error?: unknown };
    statusCode?: unknown;
    original?: unknown;
  };
  switch (e.code) {
    case "slack_webapi_rate_limited_error": {
      const sec = typeof e.retryAfter === "number" && Number.isFinite(e.retryAfter) && e.retryAfter >= 0 ? e.retryAfter : 1;
      const ms = Math.round(sec * 1000);
      return new AdapterError("slack", "RateLimited", `Slack ${method} was rate limited: retry after ${ms} ms`, ms, { cause: err });
    }
    case "slack_webapi_platform_error": {
      const code = typeof e.data?.error === "string" ? e.data.error : "unknown_error";
      if (code === "ratelimited")
        return new AdapterError("slack", "RateLimited", `Slack ${method} was rate limited: retry after 1000 ms`, 1000, { cause: err });
      if (TRANSIENT_PLATFORM.has(code))
        return new AdapterError("slack", "Transient", `Slack ${method} failed (${code}): Slack had a problem; retrying may succeed`, undefined, { cause: err });
      const hint = HINTS[code] ?? "Slack refused the request and will refuse it again if repeated";
      return new AdapterError("slack", "Rejected", `Slack ${method} failed (${code}): ${hint}`, undefined, {
        cause: err,
        ...(code === "msg_too_long" ? { reason: "too-long" as const } : {}),
      });
    }
    case "slack_webapi_http_error": {
      const status = typeof e.statusCode === "number" ? e.statusCode : 0;
      if (status >= 500 || status === 0 || status === 408)
        return new AdapterError("slack", "Transient", `Slack ${method} failed with HTTP ${status}; retrying may succeed`, undefined, { cause: err });
      return new AdapterError("slack", "Rejected", `Slack ${method} failed with HTTP ${status}: the request was refused`, undefined, { cause: err });
    }
    case "slack_webapi_request_error":
      return new AdapterError(
        "slack",
        "Transient",
        `Slack ${method} failed: could not reach the Web API (${innerName(e.original)}); check network access to slack.com or SLACK_API_URL`,
        undefined,
        { cause: err },
      );
    default:
      return new AdapterError("slack", "Transient", `Slack ${method} failed unexpectedly (${innerName(err)})`, undefined, { cause: err });
  }
}

/** The Slack error code of a platform error ("already_reacted"), if that is what err is. */
export function platformErrorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; data?: { error?: unknown } } | null;
  return e?.code === "slack_webapi_platform_error" && typeof e.data?.error === "string" ? e.data.error : undefined;
}

function innerName(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code ?? (e.cause as { code?: unknown } | undefined)?.code;
    return typeof code === "string" ? `${e.name} ${code}` : e.name;
  }
  return typeof e;
}

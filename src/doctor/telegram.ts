import type { Config } from "../config.js";
import { call, fail, hostOf, pass, remoteMessage, Unreachable, warn, type CheckResult } from "./check.js";

const TOKEN_FIX = "Copy the token again from @BotFather (/mybots → your bot → API Token) into TELEGRAM_BOT_TOKEN; a revoked token stops working at once.";

type BotApi = (name: string) => ReturnType<typeof call>;
type WebhookInfo = { url?: string; pending_update_count?: number; last_error_message?: string; last_error_date?: number };

/** Telegram: the token (getMe), then the webhook as Telegram holds it (getWebhookInfo) against TELEGRAM_MODE and TELEGRAM_WEBHOOK_URL. */
export async function checkTelegram(config: Config, timeoutMs: number): Promise<CheckResult[]> {
  const token = config.TELEGRAM_BOT_TOKEN!;
  const root = config.TELEGRAM_API_ROOT ?? "https://api.telegram.org";
  const method: BotApi = (name) => call(`${root}/bot${token}/${name}`, { method: "POST", timeoutMs });

  const me = await checkToken(method, root);
  if (me.botId === undefined) return [me.result];
  const webhook = await webhookInfo(method);
  if ("failed" in webhook) return [me.result, webhook.failed];
  const checks = config.TELEGRAM_MODE === "polling" ? pollingChecks(config, webhook.info) : webhookChecks(config, webhook.info, `/telegram/${me.botId}`);
  return [me.result, ...checks];
}

/** getMe: the bot's id when the token is good, and the check's result either way. */
async function checkToken(method: BotApi, root: string): Promise<{ botId?: number; result: CheckResult }> {
  try {
    const r = await method("getMe");
    const body = r.body as { ok?: boolean; result?: { id: number; username?: string } };
    if (r.status === 401 || r.status === 404)
      return { result: fail("telegram.token", "Telegram bot token", `Telegram refused the token (${r.status} ${remoteMessage(r.body)}).`, TOKEN_FIX) };
    if (!body.ok || !body.result)
      return {
        result: fail(
          "telegram.token",
          "Telegram bot token",
          `getMe answered ${r.status}: ${remoteMessage(r.body)}.`,
          "Check TELEGRAM_API_ROOT, or try again if Telegram is having trouble.",
        ),
      };
    const botId = body.result.id;
    return { botId, result: pass("telegram.token", "Telegram bot token", `getMe: @${body.result.username ?? "?"} (id ${botId}), ${r.ms} ms.`) };
  } catch (e) {
    if (!(e instanceof Unreachable)) throw e;
    return {
      result: fail(
        "telegram.token",
        "Telegram bot token",
        `The Bot API at ${hostOf(root)} could not be reached: ${e.message}.`,
        "Check the network (outbound HTTPS to api.telegram.org) or TELEGRAM_API_ROOT.",
      ),
    };
  }
}

async function webhookInfo(method: BotApi): Promise<{ info: WebhookInfo } | { failed: CheckResult }> {
  try {
    const r = await method("getWebhookInfo");
    const body = r.body as { ok?: boolean; result?: WebhookInfo };
    if (!body.ok || !body.result)
      return {
        failed: fail(
          "telegram.webhook",
          "Telegram webhook",
          `getWebhookInfo answered ${r.status}: ${remoteMessage(r.body)}.`,
          "Try again; if it persists, check TELEGRAM_API_ROOT.",
        ),
      };
    return { info: body.result };
  } catch (e) {
    if (!(e instanceof Unreachable)) throw e;
    return { failed: fail("telegram.webhook", "Telegram webhook", `getWebhookInfo got no answer: ${e.message}.`, "Check the network or TELEGRAM_API_ROOT.") };
  }
}

/** TELEGRAM_MODE=polling: no webhook may be registered (getUpdates is refused while one is). */
function pollingChecks(config: Config, info: WebhookInfo): CheckResult[] {
  const out: CheckResult[] = [];
  const registered = info.url ?? "";
  if (config.TELEGRAM_WEBHOOK_URL)
    out.push(
      warn(
        "telegram.mode",
        "Telegram mode",
        "TELEGRAM_WEBHOOK_URL is set, but TELEGRAM_MODE=polling, so it is ignored.",
        "Set TELEGRAM_MODE=webhook to use it, or remove TELEGRAM_WEBHOOK_URL.",
      ),
    );
  out.push(
    registered
      ? warn(
          "telegram.webhook",
          "Telegram webhook",
          `TELEGRAM_MODE=polling, but Telegram has a webhook registered (${registered}); getUpdates is refused while it is set.`,
          "If another deployment uses this bot with a webhook, stop it or give this one its own bot. Otherwise nothing to do: serve deletes the webhook when it starts polling.",
        )
      : pass(
          "telegram.webhook",
          "Telegram webhook",
          `polling mode, no webhook registered${info.pending_update_count ? ` (${info.pending_update_count} updates waiting)` : ""}.`,
        ),
  );
  return out;
}

/** TELEGRAM_MODE=webhook: the secret Telegram accepts, and the registered URL against TELEGRAM_WEBHOOK_URL and this gateway's route. */
function webhookChecks(config: Config, info: WebhookInfo, route: string): CheckResult[] {
  const out: CheckResult[] = [];
  const registered = info.url ?? "";
  const secret = config.TELEGRAM_WEBHOOK_SECRET ?? "";
  if (!/^[A-Za-z0-9_-]{1,256}$/.test(secret)) {
    out.push(
      fail(
        "telegram.secret",
        "Telegram webhook secret",
        "TELEGRAM_WEBHOOK_SECRET has characters Telegram refuses (it allows 1-256 of A-Z, a-z, 0-9, _ and -), so setWebhook fails at start.",
        "Set TELEGRAM_WEBHOOK_SECRET to a random string of those characters, e.g. `openssl rand -hex 32`.",
      ),
    );
  }
  const wanted = config.TELEGRAM_WEBHOOK_URL;
  if (wanted && registered && registered !== wanted) {
    out.push(
      fail(
        "telegram.webhook",
        "Telegram webhook",
        `Telegram delivers to ${registered}, but TELEGRAM_WEBHOOK_URL is ${wanted}.`,
        `Set TELEGRAM_WEBHOOK_URL to the URL this gateway is reached at (ending in ${route}) and restart serve: it registers the URL and secret with setWebhook at start. If another deployment registered ${registered}, it is taking this bot's updates.`,
      ),
    );
  } else if (!registered) {
    out.push(
      wanted
        ? warn(
            "telegram.webhook",
            "Telegram webhook",
            `No webhook is registered yet; serve registers ${wanted} when it starts.`,
            "Start the gateway (npm start), then run doctor again.",
          )
        : fail(
            "telegram.webhook",
            "Telegram webhook",
            "TELEGRAM_MODE=webhook, but no webhook is registered and TELEGRAM_WEBHOOK_URL is not set, so nothing will register one.",
            `Set TELEGRAM_WEBHOOK_URL=https://your.host${route} and restart serve.`,
          ),
    );
  } else if (!new URL(registered).pathname.endsWith(route)) {
    out.push(
      warn(
        "telegram.webhook",
        "Telegram webhook",
        `The webhook URL ${registered} does not end with this gateway's route ${route}.`,
        `Use a URL ending in ${route}, or make sure your reverse proxy rewrites it to that path.`,
      ),
    );
  } else if (info.last_error_message) {
    const when = info.last_error_date ? ` at ${new Date(info.last_error_date * 1000).toISOString()}` : "";
    const secret = /\b401\b|\b403\b/.test(info.last_error_message);
    out.push(
      fail(
        "telegram.webhook",
        "Telegram webhook",
        `Telegram's last delivery to ${registered} failed${when}: ${info.last_error_message}.`,
        secret
          ? "The secret Telegram sends no longer matches TELEGRAM_WEBHOOK_SECRET (another instance or a manual setWebhook changed it). Restart serve so it registers its secret again."
          : "Check that the URL reaches this gateway (reverse proxy, TLS certificate, port 443/80/88/8443) and that serve is running.",
      ),
    );
  } else {
    out.push(
      pass(
        "telegram.webhook",
        "Telegram webhook",
        `webhook ${registered} registered${wanted ? " and matches TELEGRAM_WEBHOOK_URL" : ""}; no delivery errors; the secret is set (TELEGRAM_WEBHOOK_SECRET).`,
      ),
    );
  }
  return out;
}

/**
 * What the Slack adapter listens for on Bolt's App: `message` and `app_mention` events and slash
 * commands, each normalized into an envelope and recorded through ctx.inbound (button presses are
 * approval-card.ts's). An event or command for another Slack app is dropped and counted.
 */
import type { App } from "@slack/bolt";
import type { Logger } from "../../src/log.js";
import type { AdapterContext, InboundEnvelope } from "../types.js";
import { normalizeCommand } from "./commands.js";
import { isSlackId } from "./ids.js";
import { eventOf, normalizeEvent, replyThreadTs, startsThread, type SlackIdentity } from "./normalize.js";
import { ThreadMemory } from "./threads.js";

/**
 * The bot an event reached, from Bolt's context: with one token always the
 * same; with installations, the one `authorize` found for the event's
 * workspace (SlackWorkspaces.authorize fills the context).
 */
export type Identify = (context: Record<string, unknown>) => SlackIdentity;

/** The bot of an installation, as SlackWorkspaces.authorize put it in Bolt's context. */
export function identityFromContext(context: Record<string, unknown>): SlackIdentity {
  const text = (k: string): string | undefined => (typeof context[k] === "string" && context[k] !== "" ? (context[k] as string) : undefined);
  const me: SlackIdentity = { teamId: text("teamId") ?? "", botUserId: text("botUserId") ?? "" };
  const botId = text("botId");
  const appId = text("appId");
  const enterpriseId = text("enterpriseId");
  const installerUserId = text("installerUserId");
  if (botId) me.botId = botId;
  if (appId) me.appId = appId;
  if (enterpriseId) me.enterpriseId = enterpriseId;
  if (installerUserId) me.installerUserId = installerUserId;
  return me;
}

/**
 * An event or command meant for another Slack app (a misrouted or forged request): dropped and counted.
 * `ours` is this app's id (the bot's, or the installation's); unknown, nothing is dropped.
 */
export function foreignApp(payload: unknown, ours: string | undefined, ctx: AdapterContext, log: Logger): boolean {
  const appId = (payload as { api_app_id?: unknown } | null)?.api_app_id;
  if (!ours || typeof appId !== "string" || appId === ours) return false;
  ctx.dropped?.("foreign_app");
  log.warn({ apiAppId: appId.slice(0, 32) }, "dropped a Slack event for another app (api_app_id differs from this app's)");
  return true;
}

/** Records `message` and `app_mention` events, remembering the threads the bot is summoned into. */
function listenForEvents(app: App, ctx: AdapterContext, identify: Identify, log: Logger): void {
  // One memory per bot user: a workspace's threads are its own.
  const memories = new Map<string, ThreadMemory>();
  const threadsOf = (me: SlackIdentity): ThreadMemory => {
    const known = memories.get(me.botUserId);
    if (known) return known;
    const m = new ThreadMemory(ctx.kv, me.botUserId, log);
    memories.set(me.botUserId, m);
    return m;
  };
  const record = async (env: InboundEnvelope, slackEventId: unknown): Promise<void> => {
    const r = await ctx.inbound(env);
    log.debug({ eventId: env.eventId, slackEventId, chatKind: env.chatKind, status: r.status }, "slack event recorded");
  };
  const onEvent = async ({ body, context }: { body: unknown; context: Record<string, unknown> }): Promise<void> => {
    const me = identify(context);
    const threads = threadsOf(me);
    if (foreignApp(body, me.appId, ctx, log)) return;
    const event = eventOf(body);
    const channel = event?.channel;
    const threadTs = event ? replyThreadTs(event) : undefined;
    const knownThread = threadTs !== undefined && isSlackId(channel) ? await threads.has(channel, threadTs) : false;
    const env = normalizeEvent(body, me, {
      knownThread,
      onError: (err) => {
        ctx.reportError?.("slack-normalize", err);
        log.error(
          { slackEventId: (body as { event_id?: unknown }).event_id, err: err instanceof Error ? err.name : typeof err },
          "slack: an event could not be normalized; acknowledged and not answered",
        );
      },
    });
    if (!env) return;
    if (startsThread(env) && isSlackId(channel)) await threads.remember(channel, env.threadId!);
    await record(env, (body as { event_id?: unknown }).event_id);
  };
  app.event("message", onEvent);
  app.event("app_mention", onEvent);
}

/** Records slash commands (those the gateway knows) and acks each. */
function listenForCommands(app: App, ctx: AdapterContext, identify: Identify, log: Logger): void {
  const known = (ctx.commandNames ?? ctx.commands.map((c) => c.name)).map((n) => n.toLowerCase());
  app.command(/.*/, async ({ command, ack, context }) => {
    const me = identify(context);
    if (foreignApp(command, me.appId, ctx, log)) return ack();
    const env = normalizeCommand(command as unknown as Record<string, unknown>, me, known);
    if (!env) return ack();
    const r = await ctx.inbound(env);
    log.debug({ eventId: env.eventId, status: r.status }, "slack command recorded");
    // The answer goes to the channel through the gateway; this only tells the user it was heard.
    await ack(r.status === "accepted" ? { response_type: "ephemeral", text: "Working on it…" } : undefined);
  });
}

export function listenForMessages(app: App, ctx: AdapterContext, identify: Identify, log: Logger): void {
  listenForEvents(app, ctx, identify, log);
  listenForCommands(app, ctx, identify, log);
}

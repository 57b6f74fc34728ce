import { parseCommand, type ParsedCommand } from "../../runtime/commands/parse.js";
import type { InEvent } from "../../runtime/events.js";
import type { RunHandle, Runner } from "../../runtime/runner.js";
import type { Info } from "../../session/info.js";
import type { Registry } from "../../session/registry.js";
import type { IdentityStore } from "../../store/identities.js";
import { errInfo, type Logger } from "../../log.js";
import type { TraceCarrier } from "../../telemetry/index.js";
import type { Adapter } from "../adapter.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayLedger } from "../ledger.js";
import type { GatewayMetrics } from "../metrics.js";
import type { Outbound } from "../outbound/outbound.js";
import { dmRefusal, groupAdmitted } from "./access.js";
import type { Place, RoutedAgent } from "../../agent/routing.js";
import { sessionOfRoute } from "./agent-route.js";
import { identify, placeOf } from "./conversation.js";
import { applyChange } from "./edits.js";
import type { GatewayPolicy } from "./gateway.js";
import { isAdmission } from "./group-admission.js";
import type { UnadmittedGroups } from "./groups.js";
import { messages } from "./messages.js";
import type { Pairing } from "./pairing.js";
import { answersInGroup, groupPolicy, listed } from "./policy.js";

export interface DispatchDeps {
  policy: GatewayPolicy;
  registry: Registry;
  identities: IdentityStore;
  runner: Runner;
  ledger: GatewayLedger;
  outbound: Outbound;
  pairing: Pairing;
  log: Logger;
  /** Messages in groups the bot was not admitted to: logged once per group, left with GROUP_UNADMITTED=leave. */
  unadmitted: UnadmittedGroups;
  /** Shared mode: the binding is read from the registry every time (another process may have moved it). */
  shared: boolean;
  stopping(): boolean;
  adapterFor(env: InboundEnvelope): Adapter | undefined;
  /** Logs an event handled without a turn. */
  handled(inboundId: string, outcome: string): void;
  /** Told of every conversation a message is handled in, so proactive messages can reach it later (src/gateway/proactive). */
  conversations?: { seen(env: InboundEnvelope, bindingKey: string): void };
  /** Counts what failed without failing the message (the line telling a chat its agent changed back). */
  metrics?: Pick<GatewayMetrics, "internalErrors">;
  /** AGENTS_CONFIG's routes: the agent of a place (src/agent/routing.ts). Absent: every place has the agent `default`. */
  agents?: { route(place: Place): RoutedAgent };
}

/** The pipeline's own answer to an event (an access refusal, "too long"), committed with the event as handled. */
async function reply(deps: DispatchDeps, env: InboundEnvelope, inboundId: string, text: string, sessionId = ""): Promise<void> {
  const r = await deps.ledger.commit({
    sessionId,
    inboundIds: [inboundId],
    messages: [],
    turnIncrement: 0,
    replies: [{ replyTo: env.replyTo, text, kind: "notice", severity: "info" }],
  });
  for (const { id } of r.deliveries) await deps.outbound.enqueue({ kind: "reply", deliveryId: id, to: env.replyTo });
}

/**
 * A message in a group the bot was not admitted to: never answered, never
 * shown to the agent, committed as handled (so it is not replayed), and
 * logged once per group; the bot leaves the group when addressed there (by
 * anyone but an admin) with GROUP_UNADMITTED=leave, unless the leave would
 * also take it out of an admitted chat (Discord leaves the whole server:
 * UnadmittedGroups asks the adapter, and each chat is judged by
 * groupAdmitted). Only an admin's /allowgroup gets through.
 */
async function refusedGroup(
  deps: DispatchDeps,
  env: InboundEnvelope,
  command: ParsedCommand | undefined,
  inboundId: string,
  adapter: Adapter | undefined,
  isAdmin: boolean,
): Promise<void> {
  const { policy } = deps;
  await deps.ledger.commit({ sessionId: "", inboundIds: [inboundId], messages: [], turnIncrement: 0, replies: [] });
  deps.handled(inboundId, "group-unadmitted");
  // A command may have a wait on show (Discord's deferred "thinking..." for a slash command): nothing will fill it.
  if (command && !env.change)
    void deps.outbound.enqueue({ kind: "unanswered", to: env.replyTo }).catch((err: unknown) => {
      deps.metrics?.internalErrors.inc({ where: "unanswered-wait" });
      deps.log.warn({ platform: env.platform, chatId: env.chatId, err: errInfo(err) }, "could not clear a refused command's wait for a reply");
    });
  await deps.unadmitted.refused(env, adapter, {
    leave: policy.GROUP_UNADMITTED === "leave",
    // An admin who speaks before sending /allowgroup does not make the bot leave.
    addressed: !isAdmin && answersInGroup(env, command, true, adapter?.botUsername),
    policy: groupPolicy(policy),
    // Another chat a leave here would take the bot out of: admitted by the same rule as this one.
    admitted: (chatId) => groupAdmitted({ ...env, chatId }, policy, deps.pairing.store, adapter),
  });
}

/**
 * From a recorded event to the runner: an edit or delete is applied to the
 * transcript; a group not admitted gets nothing; a sender the access policy
 * refuses, or a message over the limit, gets its reply; anything else is identified, bound to its
 * conversation's current session and handed to the runner.
 */
export async function dispatch(deps: DispatchDeps, env: InboundEnvelope, inboundId: string, trace?: TraceCarrier): Promise<RunHandle | undefined> {
  const { policy, runner } = deps;
  const adapter = deps.adapterFor(env);
  // An operator's powers reach every place; a place's own administrator (Slack: the workspace's installer) is an admin there only.
  const isOperator = listed(policy.ADMIN_USERS, env);
  const isAdmin = isOperator || env.senderAdministers === true;
  // The one parse of the text as a command: the group checks below, `respond` and the runtime's commands all read this value.
  const command = parseCommand(env.text);
  // Edits too: a group not admitted leaves nothing in any transcript.
  if (!(await groupAdmitted(env, policy, deps.pairing.store, adapter)) && !(isAdmin && !env.change && isAdmission(command, adapter?.botUsername))) {
    await refusedGroup(deps, env, command, inboundId, adapter, isAdmin);
    return;
  }
  if (env.change) {
    await applyChange({ ...deps, maxInboundChars: policy.MAX_INBOUND_CHARS }, env, env.change, inboundId);
    deps.handled(inboundId, "change");
    return undefined;
  }
  const refusal = await dmRefusal(env, policy, deps.pairing, adapter, isAdmin);
  if (refusal !== undefined) {
    await reply(deps, env, inboundId, refusal);
    return;
  }
  const length = env.textLength ?? env.text.length;
  if (length > policy.MAX_INBOUND_CHARS) {
    await reply(deps, env, inboundId, messages.tooLong(length, policy.MAX_INBOUND_CHARS));
    return;
  }

  const routed = deps.agents?.route(placeOf(env));
  const { userId, conversation, respond } = await identify(env, deps.identities, policy, adapter?.botUsername, command, routed);
  let info = await bound(deps, conversation);
  if (routed) {
    const kept = await sessionOfRoute(deps, env, conversation, routed, info);
    if (kept.moved) runner.bound(deps.registry.bindingKey(conversation), kept.info.id);
    info = kept.info;
  }
  deps.conversations?.seen(env, deps.registry.bindingKey(conversation));
  const event: InEvent = {
    type: "message",
    text: env.text,
    ...(command && { command }),
    attachments: env.attachments,
    respond,
    conversation,
    origin: {
      platform: env.platform,
      chatId: env.chatId,
      threadId: env.threadId,
      senderId: env.senderId,
      senderName: env.senderName,
      messageId: env.messageId,
      userId,
      ...(env.workspace !== undefined && { workspace: env.workspace }),
    },
    replyTo: { ...env.replyTo, kind: env.chatKind === "private" ? "private" : "group" },
    inboundId,
    receivedAt: new Date(),
    isAdmin,
    isOperator,
    botUsername: adapter?.botUsername,
    ...(trace && { trace }),
    ...(routed && { choosableAgents: routed.choosable }),
  };
  if (deps.stopping()) return undefined;
  return runner.run(runner.open(info), event);
}

/** The session the conversation is bound to: the runner's while its live session is open (one process only), else the registry's. */
async function bound(deps: DispatchDeps, conversation: InEvent["conversation"]): Promise<Info> {
  const { runner, registry } = deps;
  const key = registry.bindingKey(conversation);
  const live = deps.shared ? undefined : runner.liveFor(key);
  if (live) return live.info;
  const info = await registry.resolveChatChannel(conversation);
  runner.bound(key, info.id);
  return info;
}

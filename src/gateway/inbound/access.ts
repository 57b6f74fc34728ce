import type { Adapter } from "../adapter.js";
import type { InboundEnvelope } from "../contract.js";
import type { AccessStore } from "../../store/access.js";
import type { Pairing } from "./pairing.js";
import { messages } from "./messages.js";
import { groupPolicy, listed, listedGroup } from "./policy.js";
import type { GatewayPolicy } from "./gateway.js";

/** Who a check is about: a sender on one platform and bot (an envelope's, or a click's). */
type Sender = { platform: string; botId: string; senderId: string };

/**
 * Whether the sender passes the DM policy on their own account: DM_POLICY
 * is open, the adapter is trusted (the operator console), they are an admin,
 * on ALLOW_FROM, or paired while DM_POLICY is `pairing` (under `allowlist`
 * a grant kept from a pairing before the switch admits no one). This is also the bar for deciding a tool call
 * anywhere: a stranger in an open or admitted group may talk, never approve.
 */
export async function passesDmPolicy(
  sender: Sender,
  policy: Pick<GatewayPolicy, "DM_POLICY" | "ALLOW_FROM">,
  store: AccessStore,
  adapter: Pick<Adapter, "trusted"> | undefined,
  isAdmin: boolean,
): Promise<boolean> {
  if (policy.DM_POLICY === "open" || adapter?.trusted || isAdmin || listed(policy.ALLOW_FROM, sender)) return true;
  if (policy.DM_POLICY !== "pairing") return false;
  return store.isGranted(sender.platform, sender.botId, sender.senderId);
}

/**
 * The DM access policy (DM_POLICY, ALLOW_FROM, ADMIN_USERS, pairing grants):
 * undefined when the sender may talk to the bot, else the reply that tells
 * them why not (an allowlist refusal, a pairing code, or "ask again later").
 * Group messages pass here: groups are admitted by groupAdmitted.
 */
export async function dmRefusal(
  env: InboundEnvelope,
  policy: Pick<GatewayPolicy, "DM_POLICY" | "ALLOW_FROM">,
  pairing: Pairing,
  adapter: Adapter | undefined,
  isAdmin: boolean,
): Promise<string | undefined> {
  if (env.chatKind !== "private" || (await passesDmPolicy(env, policy, pairing.store, adapter, isAdmin))) return undefined;
  if (policy.DM_POLICY === "allowlist") return messages.allowlistOnly();
  const p = await pairing.request({ platform: env.platform, botId: env.botId, senderId: env.senderId, displayName: env.senderName });
  return p.kind === "code" ? messages.pairingCode(p.code) : messages.pairingTooSoon(p.retryAt);
}

/**
 * The group policy (GROUP_POLICY, ALLOW_GROUPS, admitted groups): whether
 * the bot talks in this message's group. A thread or forum topic belongs to
 * its group (the envelope's chatId is the group's), so admitting the group
 * admits its threads. Under `allowlist` only ALLOW_GROUPS admits; under
 * `pairing` an admin's /allowgroup in the group does too. Private chats and
 * trusted adapters always pass here (DMs are dmRefusal's).
 */
export async function groupAdmitted(
  env: InboundEnvelope,
  policy: Pick<GatewayPolicy, "DM_POLICY" | "GROUP_POLICY" | "ALLOW_GROUPS">,
  store: AccessStore,
  adapter: Pick<Adapter, "trusted" | "serves"> | undefined,
): Promise<boolean> {
  if (env.chatKind === "private" || adapter?.trusted) return true;
  const mode = groupPolicy(policy);
  if (mode === "open" || listedGroup(policy.ALLOW_GROUPS, env, adapter?.serves !== undefined)) return true;
  return mode === "pairing" && store.isGroupAdmitted(env.platform, env.botId, env.chatId);
}

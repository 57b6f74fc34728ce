import type { Adapter } from "../adapter.js";
import type { InboundEnvelope } from "../contract.js";
import type { Pairing } from "./pairing.js";
import { messages } from "./messages.js";
import { listed } from "./policy.js";
import type { GatewayPolicy } from "./gateway.js";

/**
 * The DM access policy (DM_POLICY, ALLOW_FROM, ADMIN_USERS, pairing grants):
 * undefined when the sender may talk to the bot, else the reply that tells
 * them why not (an allowlist refusal, a pairing code, or "ask again later").
 * Group messages and trusted adapters (the operator console) always pass.
 */
export async function dmRefusal(
  env: InboundEnvelope,
  policy: Pick<GatewayPolicy, "DM_POLICY" | "ALLOW_FROM">,
  pairing: Pairing,
  adapter: Adapter | undefined,
  isAdmin: boolean,
): Promise<string | undefined> {
  if (env.chatKind !== "private" || policy.DM_POLICY === "open" || adapter?.trusted || isAdmin || listed(policy.ALLOW_FROM, env)) return undefined;
  if (await pairing.store.isGranted(env.platform, env.botId, env.senderId)) return undefined;
  if (policy.DM_POLICY === "allowlist") return messages.allowlistOnly();
  const p = await pairing.request({ platform: env.platform, botId: env.botId, senderId: env.senderId, displayName: env.senderName });
  return p.kind === "code" ? messages.pairingCode(p.code) : messages.pairingTooSoon(p.retryAt);
}

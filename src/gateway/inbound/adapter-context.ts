import { ApprovalStore } from "../../store/approvals.js";
import type { Adapter, AdapterContext } from "../adapter.js";
import type { GatewayDeps } from "./gateway.js";
import { listed } from "./policy.js";

/**
 * What an adapter is given at start: the gateway's intake (`inbound`,
 * `batch`), HTTP routes, a key-value store, the command menu, and the hooks
 * it reports through (drops, errors, a group's new chat id, approval clicks),
 * each labelled with its platform.
 */
export function adapterContext(adapter: Adapter, deps: GatewayDeps, intake: Pick<AdapterContext, "inbound" | "batch">): AdapterContext {
  return {
    inbound: intake.inbound,
    batch: intake.batch,
    route: deps.route,
    kv: { get: (k) => deps.kv.get(k), set: (k, v) => deps.kv.set(k, v) },
    commands: deps.commands,
    commandNames: deps.commandNames ?? deps.commands.map((c) => c.name),
    dropped: (reason) => deps.metrics.inbound.inc({ platform: adapter.platform, outcome: reason }),
    chatMigrated: async (from, to) => {
      const groupId = await deps.identities.moveGroup(adapter.platform, from, to);
      // Its admission (/allowgroup) too, else the upgraded group goes silent. ALLOW_GROUPS names ids: the operator updates it.
      const admissions = await deps.pairing.store.moveGroupAdmission(adapter.platform, from, to);
      // Its pending approvals (a press on a card, or a typed /approve, now comes from the new id) and its "Always" grants.
      const { approvals, grants } = await new ApprovalStore(deps.kv.db).moveChat(adapter.platform, from, to);
      if (groupId || admissions || approvals || grants)
        deps.log.info(
          { platform: adapter.platform, groupId, from, to, admissions, approvals, grants },
          "a group moved to a new chat id (supergroup upgrade); its sessions, admission, pending approvals and grants follow it",
        );
    },
    log: deps.log.child({ platform: adapter.platform }),
    reportError: (where) => deps.metrics.internalErrors.inc({ where: `${adapter.platform}:${where}` }),
    approvalClick: async ({ botId, senderAdministers, ...c }) =>
      deps.onApprovalClick?.({
        ...c,
        platform: adapter.platform,
        botId: botId !== undefined && adapter.serves?.(botId) ? botId : adapter.botId,
        isAdmin: senderAdministers === true || listed(deps.policy.ADMIN_USERS, { platform: adapter.platform, senderId: c.senderId }),
      }) ?? { ok: false, text: "Approvals are not enabled here." },
    ...(deps.slack && { slack: deps.slack }),
  };
}

import type { Config } from "../../config.js";
import type { CommandSpec } from "../../runtime/commands/index.js";
import { addressedElsewhere, type ParsedCommand } from "../../runtime/commands/parse.js";
import type { AccessStore } from "../../store/access.js";
import { groupPolicy, listedGroup } from "./policy.js";

/** The command an admin types in a group to admit it (GROUP_POLICY=pairing). Not /approve: that takes a DM pairing code. */
export const ADMIT_GROUP = "allowgroup";

/** Whether the message's command (parsed once by dispatch) is `/allowgroup` addressed to this bot: an admin's one way into a group not admitted yet. */
export function isAdmission(command: ParsedCommand | undefined, botUsername: string | undefined): boolean {
  return command?.name === ADMIT_GROUP && !addressedElsewhere(command, botUsername);
}

/**
 * `/allowgroup`: an admin admits the group it is typed in, durably (a group
 * grant in AccessGrant), with its threads and topics. Under
 * GROUP_POLICY=allowlist or open it says what to do instead.
 */
export function admitGroupCommand(config: Pick<Config, "DM_POLICY" | "GROUP_POLICY" | "ALLOW_GROUPS">, store: AccessStore): CommandSpec {
  return {
    name: ADMIT_GROUP,
    summary: "let the bot talk in this group and its threads (operators)",
    usage: `/${ADMIT_GROUP}`,
    access: "admin",
    async run(ctx) {
      const { origin, replyTo } = ctx.event;
      const chat = `${origin.platform}:${origin.chatId}`;
      if (ctx.event.replyTo.kind === "private") {
        ctx.notify("error", `/${ADMIT_GROUP} admits the group it is typed in: send it in the group (or add platform:chatId to ALLOW_GROUPS).`);
        return;
      }
      const mode = groupPolicy(config);
      if (mode === "open") {
        ctx.notify("info", "Every group is open (GROUP_POLICY=open): there is nothing to admit.");
        return;
      }
      if (listedGroup(config.ALLOW_GROUPS, origin)) {
        ctx.notify("info", `This group is already admitted by ALLOW_GROUPS (${chat}).`);
        return;
      }
      if (mode === "allowlist") {
        ctx.notify("error", `GROUP_POLICY=allowlist admits only the groups in ALLOW_GROUPS: add ${chat} there and restart, or set GROUP_POLICY=pairing.`);
        return;
      }
      await store.admitGroup(origin.platform, replyTo.botId, origin.chatId, `admin:${origin.platform}:${origin.senderId}`);
      ctx.notify("success", `This group is admitted: the bot answers here and in its threads (${chat}). Revoke with: switchboard pairing revoke-group ${chat}`);
    },
  };
}

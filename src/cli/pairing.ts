import { Pairing } from "../gateway/inbound/pairing.js";
import { AccessStore } from "../store/access.js";
import type { Database } from "../store/db.js";
import { CliError, usageError, type Output } from "./output.js";

/** `switchboard pairing groups | revoke-group <platform:chatId>`: the groups admins admitted with /allowgroup. */
async function groupsCommand(store: AccessStore, sub: string, chat: string | undefined, out: Output): Promise<number> {
  if (sub === "groups") {
    const rows = (await store.listGroups()).map((g) => ({ ...g, createdAt: g.createdAt.toISOString() }));
    return out.ok(
      { groups: rows },
      rows.length
        ? rows.map((g) => `${g.platform}:${g.chatId}  bot ${g.botId}  admitted ${g.createdAt} by ${g.source}`)
        : ["No groups admitted by /allowgroup (ALLOW_GROUPS lists the others)."],
    );
  }
  const at = chat?.indexOf(":") ?? -1;
  if (!chat || at <= 0 || at === chat.length - 1)
    throw usageError("pairing revoke-group needs the group as platform:chatId (as `switchboard pairing groups` lists it)");
  const n = await store.revokeGroup(chat.slice(0, at), chat.slice(at + 1));
  if (n === 0)
    throw new CliError(
      "NotFound",
      `No admitted group ${chat}. Run \`switchboard pairing groups\` to see them (ALLOW_GROUPS entries are revoked by editing it).`,
    );
  return out.ok({ revoked: { group: chat, grants: n } }, [`Revoked ${chat}: the bot no longer answers there.`]);
}

/** `switchboard pairing list | approve <code> | groups | revoke-group <platform:chatId>`. */
export async function pairingCommand(db: Database, sub: string | undefined, code: string | undefined, out: Output): Promise<number> {
  const store = new AccessStore(db);
  if (sub === "groups" || sub === "revoke-group") return groupsCommand(store, sub, code, out);
  const pairing = new Pairing(store);
  if (sub === "list") {
    const rows = await pairing.list();
    const view = rows.map((r) => ({
      code: r.code,
      platform: r.platform,
      botId: r.botId,
      senderId: r.senderId,
      name: r.displayName,
      expiresAt: r.expiresAt.toISOString(),
    }));
    return out.ok(
      { requests: view },
      view.length
        ? view.map((r) => `${r.code}  ${r.platform}  sender ${r.senderId}${r.name ? ` (${r.name})` : ""}  expires ${r.expiresAt}`)
        : ["No pending pairing requests."],
    );
  }
  if (sub === "approve") {
    if (!code) throw usageError("pairing approve needs a code: switchboard pairing approve <code>");
    const r = await pairing.approve(code);
    if (typeof r === "string") {
      const message = {
        expired: `Code ${code} has expired. Ask the sender to message the bot again for a new code.`,
        missing: `No pairing request has code ${code}. Run \`switchboard pairing list\` to see pending codes.`,
        decided: `Code ${code} was already used.`,
        replaced: `Code ${code} was replaced by a newer request (at most 3 are pending). Ask the sender to message the bot again for a new code.`,
      }[r];
      throw new CliError(r === "missing" ? "NotFound" : "Invalid", message);
    }
    return out.ok({ approved: { code: r.code, platform: r.platform, botId: r.botId, senderId: r.senderId } }, [
      `Approved ${r.senderId} on ${r.platform}; they can now chat with the bot.`,
    ]);
  }
  throw usageError(sub ? `unknown pairing command "${sub}"` : "pairing needs a command: list, approve <code>, groups or revoke-group <platform:chatId>");
}

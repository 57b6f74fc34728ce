import { Pairing } from "../gateway/inbound/pairing.js";
import { AccessStore } from "../store/access.js";
import type { Database } from "../store/db.js";
import { CliError, usageError, type Output } from "./output.js";

/** `switchboard pairing list | approve <code>`. */
export async function pairingCommand(db: Database, sub: string | undefined, code: string | undefined, out: Output): Promise<number> {
  const pairing = new Pairing(new AccessStore(db));
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
  throw usageError(sub ? `unknown pairing command "${sub}"` : "pairing needs a command: list or approve <code>");
}

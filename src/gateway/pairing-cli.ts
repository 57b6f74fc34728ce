import { AccessStore, type Database } from "../store/index.js";
import { Pairing } from "./pairing.js";

type Emit = (json: unknown, human: string[]) => void;

/** `switchboard pairing list|approve <code>`. */
export async function pairingCommand(db: Database, sub: string | undefined, code: string | undefined, io: { emit: Emit; json: boolean }): Promise<number> {
  const pairing = new Pairing(new AccessStore(db));
  if (sub === "list") {
    const rows = await pairing.list();
    const view = rows.map((r) => ({ code: r.code, platform: r.platform, botId: r.botId, senderId: r.senderId, name: r.displayName, expiresAt: r.expiresAt.toISOString() }));
    io.emit(view, view.length ? view.map((r) => `${r.code}  ${r.platform}  sender ${r.senderId}${r.name ? ` (${r.name})` : ""}  expires ${r.expiresAt}`) : ["No pending pairing requests."]);
    return 0;
  }
  if (sub === "approve") {
    if (!code) {
      io.emit({ error: { code: "Invalid", message: "pairing approve needs a code" } }, ["usage: switchboard pairing approve <code>"]);
      return 2;
    }
    const r = await pairing.approve(code);
    if (typeof r === "string") {
      const message = {
        expired: `Code ${code} has expired. Ask the sender to message the bot again for a new code.`,
        missing: `No pairing request has code ${code}. Run \`switchboard pairing list\` to see pending codes.`,
        decided: `Code ${code} was already used.`,
        replaced: `Code ${code} was replaced by a newer request (at most 3 are pending). Ask the sender to message the bot again for a new code.`,
      }[r];
      io.emit({ error: { code: r === "missing" ? "NotFound" : "Invalid", message } }, [message]);
      return 1;
    }
    io.emit({ approved: { code: r.code, platform: r.platform, botId: r.botId, senderId: r.senderId } }, [`Approved ${r.senderId} on ${r.platform}; they can now chat with the bot.`]);
    return 0;
  }
  io.emit({ error: { code: "Invalid", message: "pairing needs list or approve <code>" } }, ["usage: switchboard pairing list | approve <code>"]);
  return 2;
}

// One OS process of the cross-process rotation race: opens its own connection,
// waits for the shared start instant, fires its share of compare-and-rotate
// attempts at once, and prints the outcome counts as JSON.
import { Registry, SessionError } from "../../src/session/index.js";
import { openDatabase, SessionStore } from "../../src/store/index.js";

const [url, agentId, userId, channel, expectedSessionId, attemptsS, startAtS] = process.argv.slice(2);
const db = await openDatabase({ url: url!, busyTimeoutMs: 10_000, maxRetries: 20, migrate: false });
const registry = new Registry(new SessionStore(db));
await new Promise((r) => setTimeout(r, Math.max(0, Number(startAtS) - Date.now())));
const results = await Promise.allSettled(
  Array.from({ length: Number(attemptsS) }, () => registry.rotateChannel({ agentId: agentId!, userId: userId!, channel: channel!, expectedSessionId })),
);
const counts: Record<string, number> = {};
for (const r of results) {
  const k =
    r.status === "fulfilled" ? "success" : r.reason instanceof SessionError ? r.reason.code : `error: ${String(r.reason?.message ?? r.reason).slice(0, 200)}`;
  counts[k] = (counts[k] ?? 0) + 1;
}
process.stdout.write(`${JSON.stringify(counts)}\n`);
await db.close();

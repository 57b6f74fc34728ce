// One gateway process of the Slack token rotation race (test/adapters/slack/token-refresh.pg.test.ts):
// its own connection pool and SlackTokenRefresher on the shared PostgreSQL. Each stdin line is a clock
// reading (epoch ms) and a team id: it asks current() for that installation and prints the answer's
// bot token and expiry as JSON (or the error's code), one line per request.
import { createInterface } from "node:readline";
import { SlackTokenRefresher } from "../../adapters/slack/token-refresh.js";
import { silentLogger } from "../../src/log.js";
import { LeaseStore, SlackInstallationStore, openDatabase } from "../../src/store/index.js";

const [url, apiUrl, clientId, clientSecret, owner] = process.argv.slice(2);
const db = await openDatabase({ url: url!, migrate: false });
let clock = 0;
const refresher = new SlackTokenRefresher({
  installations: new SlackInstallationStore(db),
  locks: new LeaseStore(db),
  clientId: clientId!,
  clientSecret: clientSecret!,
  apiUrl: apiUrl!,
  log: silentLogger,
  now: () => clock,
  marginMs: 30_000,
  owner: owner!,
});
process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  const [at, teamId] = line.split(" ");
  clock = Number(at);
  try {
    const row = await refresher.current({ enterpriseId: "", teamId: teamId! });
    process.stdout.write(`${JSON.stringify({ token: row?.botToken, expiresAt: row?.botExpiresAt?.getTime() })}\n`);
  } catch (err) {
    process.stdout.write(`${JSON.stringify({ error: (err as { code?: string }).code ?? String(err) })}\n`);
  }
}
await refresher.stop();
await db.close();

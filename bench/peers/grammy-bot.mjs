// The plain grammY peer: no storage, no limiter, `echo: <text>` from its update handler, by
// webhook (grammY's webhookCallback on node:http), in its own process as a deployed bot runs.
// Env: TELEGRAM_BOT_TOKEN, TELEGRAM_API_ROOT, TELEGRAM_WEBHOOK_SECRET, PEER_PORT. Tells its
// parent `{ listening: true }` over IPC once the port is open; the first update inits the bot (getMe).
import http from "node:http";
import { Bot, webhookCallback } from "grammy";

const env = process.env;
const bot = new Bot(env.TELEGRAM_BOT_TOKEN ?? "", { client: { apiRoot: env.TELEGRAM_API_ROOT ?? "" } });
bot.on("message:text", (ctx) => ctx.reply(`echo: ${ctx.message.text}`));
// A failed reply is the bench's to see (a missing answer); logged so a broken run says why.
bot.catch((err) => process.stderr.write(`grammY peer: ${err.message}\n`));

const server = http.createServer(webhookCallback(bot, "http", { secretToken: env.TELEGRAM_WEBHOOK_SECRET }));
server.listen(Number(env.PEER_PORT), "127.0.0.1", () => process.send?.({ listening: true }));
process.on("disconnect", () => process.exit(0));

// The Vercel Chat SDK peer: `chat` with @chat-adapter/telegram in webhook mode and
// @chat-adapter/state-memory (no durable storage, no limiter), answering `echo: <text>` to every
// message (DMs, and group messages without a mention, as the bench's Switchboard runs with
// GROUP_REQUIRE_MENTION=false). Its webhook handler takes a Fetch Request, so node:http's request
// is turned into one. Env: TELEGRAM_BOT_TOKEN, TELEGRAM_API_ROOT, TELEGRAM_WEBHOOK_SECRET,
// PEER_PORT. Tells its parent `{ listening: true }` over IPC once the port is open.
import http from "node:http";
import { createTelegramAdapter } from "@chat-adapter/telegram";
import { createMemoryState } from "@chat-adapter/state-memory";
import { Chat, ConsoleLogger } from "chat";

const env = process.env;
// Warnings and errors only: the default "info" logs every webhook, which a deployed bot would not.
const logger = new ConsoleLogger("warn", "chat-sdk-peer");
const telegram = createTelegramAdapter({
  botToken: env.TELEGRAM_BOT_TOKEN ?? "",
  apiUrl: env.TELEGRAM_API_ROOT ?? "",
  secretToken: env.TELEGRAM_WEBHOOK_SECRET ?? "",
  mode: "webhook",
  userName: "bench_bot",
  logger,
});
const bot = new Chat({ userName: "bench_bot", adapters: { telegram }, state: createMemoryState(), logger });
const echo = (thread, message) => thread.post(`echo: ${message.text}`);
bot.onDirectMessage(echo);
bot.onNewMention(echo);
bot.onNewMessage(/[\s\S]*/, echo);

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    try {
      const request = new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers: req.headers, body: Buffer.concat(chunks) });
      const answer = await bot.webhooks.telegram(request);
      res.writeHead(answer.status, Object.fromEntries(answer.headers));
      res.end(Buffer.from(await answer.arrayBuffer()));
    } catch (err) {
      // Told to the bench (a missing answer) and to stderr, so a broken run says why.
      process.stderr.write(`Chat SDK peer: ${err instanceof Error ? err.message : String(err)}\n`);
      res.writeHead(500).end();
    }
  });
});
server.listen(Number(env.PEER_PORT), "127.0.0.1", () => process.send?.({ listening: true }));
process.on("disconnect", () => process.exit(0));

import { afterAll, describe, expect, it } from "vitest";
import { FakeDiscord } from "../fakes/discord.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram, type TgUpdate } from "../fakes/telegram.js";
import { freshDatabaseUrl } from "../support/db.js";
import { parsePrometheus } from "../support/prometheus.js";
import { freePort } from "../../tools/pg-cluster.js";
import { report, sleep } from "./helpers.js";
import { sharedTelegramEnv, startGatewayProcess, stopGatewayProcess, type GatewayProcess } from "./multiprocess-gateways.js";
import { startRoundRobinProxy, type RoundRobinProxy, type RoutedRequest } from "./multiprocess-proxy.js";
import { collectReplies, classify, peakRate, percentile, tally } from "./multiprocess-tally.js";
import { buildWorld, pace, prng, PLATFORMS, type Chat, type Platform, type WorldHooks } from "./multiprocess-traffic.js";

const env = process.env;
const MESSAGES = Number(env.MULTIPROCESS_MESSAGES ?? 10_000);
const CHATS = Number(env.MULTIPROCESS_CHATS ?? 500);
const PROCESSES = Number(env.MULTIPROCESS_PROCESSES ?? 3);
const SEED = Number(env.MULTIPROCESS_SEED ?? 9);
/**
 * Messages a second the test sends per platform, under each platform's
 * declared budget for one bot (Telegram 30 msgs/s, Slack 50/s, Discord
 * 50/s): the replies then fit those budgets too. Chats and messages are
 * split in the same proportion, so the three platforms finish together.
 */
const RATES: Record<Platform, number> = {
  telegram: Number(env.MULTIPROCESS_RATE_TELEGRAM ?? 15),
  slack: Number(env.MULTIPROCESS_RATE_SLACK ?? 25),
  discord: Number(env.MULTIPROCESS_RATE_DISCORD ?? 25),
};
/** Messages sent back to back in one chat: several in flight at once, against a per-chat budget of 1/s with bursts of 3. */
const BURST = 4;
const NEW_SHARE = 0.03;
/** Share of Slack events and Telegram updates delivered twice (a retry that lands on another process). */
const REDELIVER_SHARE = 0.02;
const DRAIN_MS = Number(env.MULTIPROCESS_DRAIN_MS ?? 240_000);
const WEBHOOK_SECRET = "multiprocess-webhook-secret";

/**
 * Several gateway processes on one PostgreSQL database (SHARED_DATABASE),
 * each running every adapter against shared fakes: Telegram by webhook and
 * Slack's Events API behind a round-robin proxy (consecutive events of one
 * chat land on different processes), Discord with one shard per process.
 * 10,000 messages across 500 chats with /new mixed in; per-chat order,
 * exactly-once replies and one rotation per /new must hold, and they come
 * from the database (conversation leases), not from any process's memory.
 */
describe("several processes on one PostgreSQL database", () => {
  const gateways: GatewayProcess[] = [];
  let proxy: RoundRobinProxy | undefined;
  // Telegram redelivers a webhook update until it gets a 2xx, before sending the next one; it refuses
  // (429) a bot's messages beyond 30 in any second, which the three processes share (one budget in the database).
  const tg = new FakeTelegram({ webhookRetry: { attempts: 60, delayMs: 500 }, botLimit: { perSecond: 30 } });
  const slack = new FakeSlack();
  const dc = new FakeDiscord({ heartbeatIntervalMs: 5000 });
  afterAll(async () => {
    for (const g of gateways) g.child.kill("SIGKILL");
    await Promise.all(gateways.map((g) => g.exited));
    await proxy?.close();
    await Promise.all([tg.close(), slack.close(), dc.close()]);
  });

  it(`${PROCESSES} processes, ${MESSAGES} messages across ${CHATS} chats: in order, once each, one rotation per /new`, async () => {
    const started = Date.now();
    const rand = prng(SEED);
    await Promise.all([tg.start(), slack.start(), dc.start()]);
    const ports = await Promise.all(Array.from({ length: PROCESSES }, () => freePort()));

    // Which process each proxied event went to, per chat: how often consecutive events of one chat were split.
    const lastTarget = new Map<string, number>();
    const split = { same: 0, different: 0 };
    const acked = new Set<number>();
    const onRouted = (r: RoutedRequest) => {
      let key: string | undefined;
      try {
        const body = JSON.parse(r.body.toString("utf8")) as Record<string, any>;
        if (r.path.startsWith("/telegram/")) {
          key = `telegram:${body.message?.chat?.id}`;
          if (r.status === 200) acked.add(Number(body.update_id));
        } else if (body.event) {
          const ev = body.event;
          key = String(ev.channel).startsWith("D") ? `slack:${ev.channel}` : `slack:${ev.channel}:${ev.thread_ts ?? ev.ts}`;
        }
      } catch {
        return;
      }
      if (!key) return;
      const prev = lastTarget.get(key);
      if (prev !== undefined) split[prev === r.target ? "same" : "different"]++;
      lastTarget.set(key, r.target);
    };
    proxy = await startRoundRobinProxy(
      ports.map((port) => ({ host: "127.0.0.1", port })),
      onRouted,
    );
    const telegramHook = `${proxy.url}/telegram/${tg.token.split(":")[0]}`;

    const hooks: WorldHooks = {
      slackEventsUrl: () => `${proxy!.url}/slack/events`,
      telegramRedeliver: async (u: TgUpdate) => {
        // Only once the first delivery was acknowledged (Telegram resends an update whose answer it
        // missed), never ahead of it: that would be a new order, not a redelivery.
        const end = Date.now() + 120_000;
        while (!acked.has(u.update_id) && Date.now() < end) await sleep(50);
        if (!acked.has(u.update_id)) return;
        await sleep(rand() * 1000);
        await tg.deliverWebhook(telegramHook, u, WEBHOOK_SECRET);
      },
      redeliverShare: REDELIVER_SHARE,
      redeliveries: [],
      counts: { slackRetries: 0, redelivered: { telegram: 0, slack: 0, discord: 0 } },
    };
    const totalRate = RATES.telegram + RATES.slack + RATES.discord;
    const chats: Chat[] = buildWorld(
      { tg, slack, dc },
      {
        messages: MESSAGES,
        chats: CHATS,
        share: { telegram: RATES.telegram / totalRate, slack: RATES.slack / totalRate, discord: RATES.discord / totalRate },
        groupShare: { telegram: 0.3, slack: 0.4, discord: 0.6 },
        newShare: NEW_SHARE,
        shards: PROCESSES,
        rand,
      },
      hooks,
    );

    // One fresh, unmigrated database: the processes migrate it themselves, at the same moment.
    const databaseUrl = await freshDatabaseUrl("postgresql");
    const common = {
      ...sharedTelegramEnv({ databaseUrl, token: tg.token, apiRoot: tg.apiRoot, hook: telegramHook, webhookSecret: WEBHOOK_SECRET }),
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      SLACK_API_URL: slack.apiUrl,
      DISCORD_BOT_TOKEN: dc.token,
      DISCORD_API_URL: dc.apiUrl,
      DISCORD_SHARD_COUNT: String(PROCESSES),
    };
    const bootStarted = Date.now();
    // Every byte the processes print is searched for the tokens and secrets.
    const secrets = [tg.token, WEBHOOK_SECRET, slack.botToken, slack.signingSecret, dc.token];
    gateways.push(...(await Promise.all(ports.map((port, i) => startGatewayProcess(i, port, { ...common, DISCORD_SHARD_ID: String(i) }, secrets)))));
    const bootMs = Date.now() - bootStarted;
    expect(tg.webhook?.url).toBe(telegramHook);
    expect(dc.gateway.sessions.map((s) => s.shardId).sort()).toEqual(Array.from({ length: PROCESSES }, (_, i) => i));

    // ---- traffic: the three platforms side by side, each at its own pace.
    const firstSeen = new Map<number, number>();
    /** Messages answered so far: distinct sequence numbers, plus rotation replies. */
    const answered = { n: 0 };
    const scan = () => {
      const all = collectReplies({ tg, slack, dc });
      const now = Date.now();
      let rotations = 0;
      for (const r of all) {
        const t = classify(r.text);
        if (t === "new") rotations++;
        else if (typeof t === "object" && !firstSeen.has(t.seq)) firstSeen.set(t.seq, now);
      }
      answered.n = firstSeen.size + rotations;
      return all;
    };
    const expectedReplies = chats.reduce((n, c) => n + c.messages.length, 0);
    let scanning = true;
    const scanner = (async () => {
      while (scanning) {
        scan();
        await sleep(250);
      }
    })();
    const trafficStarted = Date.now();
    await Promise.all(
      PLATFORMS.map((p) =>
        pace(
          chats.filter((c) => c.platform === p),
          RATES[p],
          BURST,
          rand,
        ),
      ),
    );
    const sendMs = Date.now() - trafficStarted;
    await Promise.all(hooks.redeliveries);
    const drainEnd = Date.now() + DRAIN_MS;
    while (answered.n < expectedReplies && Date.now() < drainEnd) await sleep(250);
    // Anything late (a duplicate) still has time to show.
    await sleep(3000);
    scanning = false;
    await scanner;
    const replies = scan();
    const trafficMs = Date.now() - trafficStarted;
    const t = tally(chats, replies);

    // ---- the database's view: rotations, forks (two successors of one session), leftovers.
    const { default: pg } = await import("pg");
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    const one = async (sql: string) => (await db.query(sql)).rows;
    const dbRotations = Number((await one(`SELECT count(*)::int AS n FROM "Session" WHERE "parentId" IS NOT NULL`))[0].n);
    const forks = Number(
      (
        await one(
          `SELECT coalesce(sum(n - 1), 0)::int AS n FROM (SELECT count(*) AS n FROM "Session" WHERE "parentId" IS NOT NULL GROUP BY "parentId" HAVING count(*) > 1) f`,
        )
      )[0].n,
    );
    const inbound = Object.fromEntries((await one(`SELECT status, count(*)::int AS n FROM "InboundEvent" GROUP BY status`)).map((r) => [r.status, r.n]));
    const deliveries = Object.fromEntries((await one(`SELECT status, count(*)::int AS n FROM "OutboundDelivery" GROUP BY status`)).map((r) => [r.status, r.n]));
    const leasesLeft = Number((await one(`SELECT count(*)::int AS n FROM "ConversationLease"`))[0].n);
    // Events of one conversation recorded in the same millisecond: their order then rests on the tiebreak alone.
    const receivedAtTies = Number(
      (
        await one(
          `SELECT coalesce(sum(n - 1), 0)::int AS n FROM (SELECT count(*) AS n FROM "InboundEvent" GROUP BY "conversation", "receivedAt" HAVING count(*) > 1) t`,
        )
      )[0].n,
    );
    // For a few order violations: how the two messages were recorded, handled and answered, by which process.
    const inversions: string[] = [];
    for (const inv of t.inversions.slice(0, 2)) {
      inversions.push(`-- #${inv.late} answered after #${inv.early}:`);
      for (let seq = Math.min(inv.late, inv.early) - 3; seq <= Math.max(inv.late, inv.early) + 1; seq++) {
        const ev = await one(`SELECT id, "receivedAt", "processedAt", status, conversation FROM "InboundEvent" WHERE envelope LIKE '%hello #${seq}"%'`);
        const d = ev[0] ? await one(`SELECT owner, "createdAt", "claimedAt", "sentAt", status FROM "OutboundDelivery" WHERE "inboundId" = '${ev[0].id}'`) : [];
        const ms = (v: unknown) => (v instanceof Date ? v.toISOString().slice(11, 23) : String(v));
        inversions.push(
          `#${seq}${seq === inv.late ? " (answered late)" : ""} ${String(ev[0]?.conversation ?? "").slice(-22)}: recorded ${ms(ev[0]?.receivedAt)} handled ${ms(ev[0]?.processedAt)}; reply by ${String(d[0]?.owner).slice(0, 8)} created ${ms(d[0]?.createdAt)} claimed ${ms(d[0]?.claimedAt)} sent ${ms(d[0]?.sentAt)}`,
        );
      }
    }
    await db.end();

    // ---- each process's own counters: every one of them took part.
    let metricsLeaks = 0;
    const perProcess = await Promise.all(
      gateways.map(async (g) => {
        const text = await (await fetch(`http://127.0.0.1:${g.port}/metrics`)).text();
        if (secrets.some((x) => text.includes(x))) metricsLeaks++;
        const samples = parsePrometheus(text);
        const sum = (name: string, labels: Record<string, string> = {}) =>
          samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0);
        return {
          recorded: sum("switchboard_inbound_total", { outcome: "accepted" }),
          duplicatesDropped: sum("switchboard_duplicates_dropped_total"),
          turns: sum("switchboard_turn_latency_seconds_count"),
          sent: sum("switchboard_outbound_total", { call: "send", outcome: "ok" }),
        };
      }),
    );
    const stopStarted = Date.now();
    await Promise.all(gateways.map((g) => stopGatewayProcess(g)));
    const stopMs = Date.now() - stopStarted;
    const exitCodes = gateways.map((g) => g.child.exitCode ?? g.child.signalCode);

    const newCount = chats.reduce((n, c) => n + c.messages.filter((m) => m.isNew).length, 0);
    const doubleRotations = forks + t.extraRotationReplies + Math.max(0, dbRotations - newCount);
    const latencies = chats.flatMap((c) =>
      c.messages.filter((m) => !m.isNew && m.sentAt && firstSeen.has(m.seq)).map((m) => firstSeen.get(m.seq)! - m.sentAt!),
    );
    const tgRate = peakRate(
      tg.callsTo("sendMessage"),
      (c) => c.at,
      (c) => String(c.params.chat_id),
    );
    const slRate = peakRate(
      slack.callsTo("chat.postMessage"),
      (c) => c.at,
      (c) => `${String(c.params.channel)}:${String(c.params.thread_ts ?? "")}`,
    );
    const dcRate = peakRate(
      dc.restCalls("POST /channels/:id/messages"),
      (c) => c.at,
      (c) => c.path,
    );
    const split3 = (p: Platform) => ({
      chats: chats.filter((c) => c.platform === p).length,
      groups: chats.filter((c) => c.platform === p && c.kind === "group").length,
      messages: chats.filter((c) => c.platform === p).reduce((n, c) => n + c.messages.length, 0),
      ...t.perPlatform[p],
    });
    const counts = {
      processes: PROCESSES,
      messages: t.expected,
      chats: chats.length,
      newCommands: newCount,
      telegram: split3("telegram"),
      slack: split3("slack"),
      discord: split3("discord"),
      orderViolations: t.orderViolations,
      chatsWithOrderViolations: t.chatsWithOrderViolations,
      duplicates: t.duplicates,
      doubleRotations,
      rotationReplies: t.rotationReplies,
      rotationsInDatabase: dbRotations,
      forks,
      alreadyStarted: t.alreadyStarted,
      missing: t.missing,
      unexpected: t.unexpected,
      redelivered: hooks.counts.redelivered,
      slackRetries: hooks.counts.slackRetries,
      consecutiveSameChatEventsOnDifferentProcesses: `${split.different}/${split.same + split.different}`,
      proxiedPerProcess: proxy.perTarget,
      perProcess,
      latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: percentile(latencies, 100) },
      peakSendsPerSecond: { telegram: tgRate.peak, slack: slRate.peak, discord: dcRate.peak },
      telegramBotLimit429s: tg.botLimitRejections,
      peakSendsPerChatPerSecond: { telegram: tgRate.peakPerChat, slack: slRate.peakPerChat, discord: dcRate.peakPerChat },
      // Replies posted as a streamed draft (a turn slow to start); Discord's final replies carry a nonce, drafts none.
      discordDrafts: dc.sent().filter((m) => m.message.nonce === undefined).length,
      inbound,
      deliveries,
      leasesLeft,
      receivedAtTies,
      logProblems: gateways.map((g) => g.problems.length),
      secretLeaks: gateways.reduce((n, g) => n + g.leaks.length, 0) + metricsLeaks,
      exitCodes,
      seconds: {
        boot: +(bootMs / 1000).toFixed(1),
        sending: +(sendMs / 1000).toFixed(1),
        traffic: +(trafficMs / 1000).toFixed(1),
        stop: +(stopMs / 1000).toFixed(1),
        wall: +((Date.now() - started) / 1000).toFixed(1),
      },
    };
    report("multiprocess", counts);
    if (t.samples.length) console.log(`multiprocess samples:\n${t.samples.join("\n")}`);
    if (inversions.length) console.log(`multiprocess order violations in the database:\n${inversions.join("\n")}`);
    for (const g of gateways) {
      if (!g.problems.length) continue;
      const byMsg = new Map<string, number>();
      for (const line of g.problems) {
        const msg = /"msg":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 200);
        byMsg.set(msg, (byMsg.get(msg) ?? 0) + 1);
      }
      console.log(`gateway ${g.index} logged ${g.problems.length} warnings/errors: ${JSON.stringify(Object.fromEntries(byMsg))}\nfirst: ${g.problems[0]}`);
    }

    expect({
      orderViolations: t.orderViolations,
      duplicates: t.duplicates,
      doubleRotations,
      missing: t.missing,
      unexpected: t.unexpected,
      alreadyStarted: t.alreadyStarted,
      secretLeaks: counts.secretLeaks,
    }).toEqual({
      orderViolations: 0,
      duplicates: 0,
      doubleRotations: 0,
      missing: 0,
      unexpected: 0,
      alreadyStarted: 0,
      secretLeaks: 0,
    });
    expect({ rotationReplies: t.rotationReplies, rotationsInDatabase: dbRotations }).toEqual({ rotationReplies: newCount, rotationsInDatabase: newCount });
    // The bot-wide budget holds across the processes: every sendMessage attempt (a 429 too) in any 1 s of the fake's clock.
    expect({ telegramPeak: tgRate.peak <= 30, telegramBotLimit429s: tg.botLimitRejections }).toEqual({ telegramPeak: true, telegramBotLimit429s: 0 });
    // Every process recorded events and ran turns: the work was really spread.
    for (const p of perProcess) expect(p.turns).toBeGreaterThan(0);
  }, 900_000);
});

import type { ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { startSharedCluster } from "../support/gateway-processes.js";
import type { LoopbackPlatform } from "../support/loopback-platform.js";
import { unmarked } from "../support/notices.js";

/**
 * Three gateway processes on one PostgreSQL database behind a round-robin
 * proxy: consecutive messages of one chat land on different processes, and
 * per-chat order, exactly-once replies and single rotations must still hold.
 * The ordering comes from conversation leases in the database. The quick
 * version (480 messages, loopback platform) of multiprocess.test.ts.
 */
describe("several gateway processes on one PostgreSQL database", () => {
  const children: ChildProcess[] = [];
  let platform: LoopbackPlatform | undefined;
  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    await platform?.close();
  });

  it("keeps per-chat order, answers once, and rotates once per /new", async () => {
    const cluster = await startSharedCluster();
    platform = cluster.platform;
    children.push(...cluster.gateways.map((g) => g.child));
    const { dbUrl, proxy } = cluster;

    const CHATS = 40;
    const PER_CHAT = 12;
    const isNew = (c: number, i: number) => c % 3 === 0 && (i === 4 || i === 8);
    let sent = 0;
    await Promise.all(
      Array.from({ length: CHATS }, async (_, c) => {
        for (let i = 0; i < PER_CHAT; i++) {
          const text = isNew(c, i) ? "/new" : `msg ${c}-${i}`;
          const r = await fetch(`${proxy.url}/loopback/update`, {
            method: "POST",
            body: JSON.stringify({ id: 0, chatId: `c${c}`, senderId: `u${c}`, text, messageId: `m${i}`, date: Date.now() }),
          });
          expect(r.status).toBe(200);
          sent++;
        }
      }),
    );
    expect(sent).toBe(CHATS * PER_CHAT);
    const end = Date.now() + 90_000;
    while (platform.messages.length < CHATS * PER_CHAT && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    // Anything late or doubled is sent before a gateway has stopped: stop all three and wait for their exits.
    await Promise.all(
      children.map((c) => {
        const exited = new Promise((r) => c.once("exit", r));
        c.kill("SIGTERM");
        return exited;
      }),
    );

    let orderViolations = 0;
    let duplicates = 0;
    let doubleRotations = 0;
    let missing = 0;
    for (let c = 0; c < CHATS; c++) {
      const replies = platform.messages.filter((m) => m.chatId === `c${c}`).map((m) => m.text);
      const expected = Array.from({ length: PER_CHAT }, (_, i) => (isNew(c, i) ? "NEW" : `echo: msg ${c}-${i}`));
      const got = replies.map((t) => (unmarked(t).startsWith("Started a fresh session") ? "NEW" : t));
      missing += expected.filter(
        (e, i) => !got.includes(e) && !(e === "NEW" && got.filter((g) => g === "NEW").length >= expected.slice(0, i + 1).filter((x) => x === "NEW").length),
      ).length;
      duplicates += got.filter((g, i) => g !== "NEW" && got.indexOf(g) !== i).length;
      doubleRotations += Math.max(0, got.filter((g) => g === "NEW").length - expected.filter((e) => e === "NEW").length);
      doubleRotations += replies.filter((t) => t === "A fresh session was already started.").length;
      if (JSON.stringify(got) !== JSON.stringify(expected)) orderViolations++;
    }
    const counts = {
      processes: 3,
      chats: CHATS,
      messages: CHATS * PER_CHAT,
      replies: platform.messages.length,
      orderViolations,
      duplicates,
      doubleRotations,
      missing,
    };
    console.log(`shared database: ${JSON.stringify(counts)}`);
    if (missing || orderViolations) {
      const { default: pg } = await import("pg");
      const db = new pg.Client({ connectionString: dbUrl });
      await db.connect();
      const inbound = await db.query(`SELECT status, count(*)::int AS n FROM "InboundEvent" GROUP BY status`);
      const deliveries = await db.query(`SELECT status, count(*)::int AS n FROM "OutboundDelivery" GROUP BY status`);
      const leases = await db.query(`SELECT count(*)::int AS n FROM "ConversationLease"`);
      console.log(`diagnostics: ${JSON.stringify({ inbound: inbound.rows, deliveries: deliveries.rows, leases: leases.rows })}`);
      for (let c = 0; c < CHATS; c++) {
        const got = platform.messages.filter((m) => m.chatId === `c${c}`).map((m) => m.text);
        if (got.length !== PER_CHAT) console.log(`chat c${c}: ${JSON.stringify(got)}`);
      }
      await db.end();
    }
    await proxy.close();
    expect({ orderViolations, duplicates, doubleRotations, missing }).toEqual({ orderViolations: 0, duplicates: 0, doubleRotations: 0, missing: 0 });
  }, 180_000);
});

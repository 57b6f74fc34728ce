/**
 * Three gateway processes on one PostgreSQL database (SHARED_DATABASE=true)
 * behind a round-robin proxy, so each message of the chat lands on the next
 * process. Every process has the conversation's session live in memory
 * before the settings change; a setting changed through one process must be
 * the one every process uses for the next turn, and no setting may erase
 * another (each command writes its own key only).
 */
import type { ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { startSharedCluster } from "../support/gateway-processes.js";
import type { LoopbackPlatform } from "../support/loopback-platform.js";

describe("settings with several processes on one database", () => {
  const children: ChildProcess[] = [];
  let platform: LoopbackPlatform | undefined;
  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    await platform?.close();
  });

  it("a setting changed on one process is used by every process for the next turn, and none is lost", async () => {
    const cluster = await startSharedCluster({
      TEST_AGENT: "settings",
      PERSONAS: JSON.stringify({ pirate: "Talk like a pirate." }),
    });
    platform = cluster.platform;
    children.push(...cluster.gateways.map((g) => g.child));
    const { dbUrl, proxy } = cluster;
    const p = platform;
    const { default: pg } = await import("pg");
    const db = new pg.Client({ connectionString: dbUrl });
    await db.connect();
    let n = 0;
    /**
     * Sends one message through the next process and waits for its reply,
     * then until the conversation's lease is released: the next message is
     * then handled by the process that receives it.
     */
    const say = async (text: string): Promise<string> => {
      const before = p.messages.length;
      const r = await fetch(`${proxy.url}/loopback/update`, {
        method: "POST",
        body: JSON.stringify({ id: 0, chatId: "settings-chat", senderId: "u1", text, messageId: `m${++n}`, date: Date.now() }),
      });
      expect(r.status).toBe(200);
      const end = Date.now() + 30_000;
      while (p.messages.length === before && Date.now() < end) await new Promise((res) => setTimeout(res, 20));
      while ((await db.query(`SELECT 1 FROM "ConversationLease"`)).rows.length && Date.now() < end) await new Promise((res) => setTimeout(res, 20));
      return p.messages.at(-1)?.text ?? "(no reply)";
    };
    const pid = (reply: string) => /pid=(\d+)/.exec(reply)?.[1];
    const settings = (reply: string) => reply.replace(/ pid=\d+$/, "");

    // In shared mode any process holding the conversation's lease may answer a recorded event, so
    // round-robin delivery does not make round-robin answers: send until every process has answered.
    const untilEachAnswered = async (word: string) => {
      const replies: string[] = [];
      while (new Set(replies.map(pid)).size < 3 && replies.length < 30) replies.push(await say(`${word} ${replies.length}`));
      return replies;
    };
    // Each process answers: the session is live in all three, with its metadata as it was then.
    const warm = await untilEachAnswered("warm");
    expect(settings(warm[0]!)).toBe("settings: model=- temperature=- maxtokens=- persona=default turns=0");
    expect(new Set(warm.map(pid)).size).toBe(3);
    // One setting through each process.
    expect(await say("/model big-model")).toBe("model set to big-model.");
    expect(await say("/temperature 0.2")).toBe("temperature set to 0.2.");
    expect(await say("/persona pirate")).toBe("persona set to pirate.");
    expect(await say("/maxtokens 512")).toBe("max output tokens set to 512.");
    // The next turn on every process uses all of them.
    const after = await untilEachAnswered("after");
    console.log(`shared settings: ${JSON.stringify({ warm, after })}`);
    expect(new Set(after.map(pid)).size).toBe(3);
    for (const [i, reply] of after.entries())
      expect(settings(reply)).toBe(`settings: model=big-model temperature=0.2 maxtokens=512 persona=pirate turns=${warm.length + i}`);
    // And what each process shows.
    const status = [await say("/status"), await say("/status"), await say("/status")];
    for (const s of status) expect(s).toMatch(/model: big-model[\s\S]*persona: pirate/);

    const rows = await db.query(`SELECT "metadata", "persona", "turnCount" FROM "Session"`);
    await db.end();
    expect(rows.rows).toHaveLength(1);
    expect(JSON.parse(rows.rows[0].metadata)).toEqual({ "model.name": "big-model", "model.temperature": 0.2, "model.max_output_tokens": 512 });
    expect(rows.rows[0]).toMatchObject({ persona: "pirate", turnCount: warm.length + after.length });
    await proxy.close();
  }, 180_000);
});

/**
 * Threads the bot was summoned into. After a top-level @-mention the bot
 * answers in a thread under it, and that thread is the conversation: later
 * replies there need no mention (people don't re-mention a bot they are
 * already talking to in its thread). Kept in ctx.kv so it survives a restart,
 * with an in-memory LRU in front so the hot path costs no read.
 */
import type { AdapterContext } from "../types.js";
import { threadMemoryKey } from "./ids.js";

export class ThreadMemory {
  private readonly lru = new Map<string, true>();

  constructor(
    private readonly kv: AdapterContext["kv"],
    private readonly botId: string,
    private readonly log: AdapterContext["log"],
    private readonly capacity = 5000,
  ) {}

  async remember(channelId: string, threadTs: string): Promise<void> {
    const key = threadMemoryKey(this.botId, channelId, threadTs);
    if (this.lru.has(key)) return;
    this.touch(key);
    try {
      await this.kv.set(key, "1");
    } catch (err) {
      // The LRU still knows it; only a restart would forget this thread.
      this.log.warn({ err: errName(err) }, "could not persist a Slack thread the bot joined");
    }
  }

  async has(channelId: string, threadTs: string): Promise<boolean> {
    const key = threadMemoryKey(this.botId, channelId, threadTs);
    if (this.lru.has(key)) {
      this.touch(key);
      return true;
    }
    try {
      if ((await this.kv.get(key)) === "1") {
        this.touch(key);
        return true;
      }
    } catch (err) {
      this.log.warn({ err: errName(err) }, "could not read Slack thread memory; treating the thread as unknown");
    }
    return false;
  }

  private touch(key: string): void {
    this.lru.delete(key);
    this.lru.set(key, true);
    if (this.lru.size > this.capacity) {
      const oldest = this.lru.keys().next().value;
      if (oldest !== undefined) this.lru.delete(oldest);
    }
  }
}

function errName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

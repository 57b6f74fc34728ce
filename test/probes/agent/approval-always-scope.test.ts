/**
 * Probe: "Who may decide. In a group, APPROVERS: `requester` (default:
 * whoever asked, or an operator in ADMIN_USERS) ... Anyone else's press is
 * refused". With the default, a group member decides only their own calls.
 * "Always in this chat" then must not let one member decide every other
 * member's later calls of that tool: Mallory's "always" on her own call would
 * otherwise approve Bob's next call, which only Bob or an operator may
 * decide, without Bob ever seeing a card. An operator's "always" is a
 * decision for the chat and may stand. Real SQLite store and KV.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ApprovalCard } from "../../../src/runtime/approvals/card.js";
import type { CardTransport } from "../../../src/runtime/approvals/options.js";
import { ApprovalService } from "../../../src/runtime/approvals/service.js";
import type { MessageEvent } from "../../../src/runtime/events.js";
import { ApprovalStore } from "../../../src/store/approvals.js";
import type { ReplyAddress } from "../../../src/store/codecs.js";
import { KvStore } from "../../../src/store/kv.js";
import { openTestDb, type TestDb } from "../../support/db.js";

class Cards implements CardTransport {
  readonly shown: ApprovalCard[] = [];
  #waiting: Array<(c: ApprovalCard) => void> = [];
  async show(_to: ReplyAddress, card: ApprovalCard): Promise<string> {
    this.shown.push(card);
    for (const w of this.#waiting.splice(0)) w(card);
    return `m-${card.id}`;
  }
  async update(): Promise<void> {}
  next(n: number): Promise<ApprovalCard> {
    if (this.shown.length >= n) return Promise.resolve(this.shown[n - 1]!);
    return new Promise((resolve) => this.#waiting.push(() => this.shown.length >= n && resolve(this.shown[n - 1]!)));
  }
}

const replyTo: ReplyAddress = { platform: "telegram", botId: "bot", chatId: "-100777", kind: "group" };
const event = (sender: string): MessageEvent => ({
  type: "message",
  text: "write it",
  respond: true,
  origin: { platform: "telegram", chatId: "-100777", senderId: sender, senderName: sender },
  replyTo,
  conversation: { agentId: "bot", userId: "g", groupId: "g", channel: "telegram:bot:-100777" },
  receivedAt: new Date(),
});

let t: TestDb;
beforeAll(async () => {
  t = await openTestDb("sqlite");
});
afterAll(async () => {
  await t?.close();
});

it("APPROVERS=requester: a member's 'Always in this chat' on her own call does not approve another member's later call", async () => {
  const cards = new Cards();
  const service = new ApprovalService({
    store: new ApprovalStore(t.db),
    kv: new KvStore(t.db),
    transport: cards,
    owner: "probe",
    timeoutMs: 3_600_000,
    approvers: "requester",
    mayApprove: async () => true,
  });
  const call = { id: "c1", name: "files__write_file", arguments: '{"path":"/srv/x","content":"1"}' };
  const ac = new AbortController();
  // Mallory's own call: she may decide it, and presses "Always in this chat".
  const mine = service.ask(call, "files", { sessionId: "s-group", event: event("mallory") }, ac.signal);
  const card = await cards.next(1);
  const r = await service.click({ id: card.id, action: "always", platform: "telegram", botId: "bot", chatId: "-100777", senderId: "mallory", isAdmin: false });
  expect(r.ok).toBe(true);
  expect((await mine).decision).toBe("approve");

  // Bob's call of the same tool: only Bob (or an operator) may decide it, so it must wait for a card.
  const bob = new AbortController();
  const his = service.ask({ ...call, id: "c2" }, "files", { sessionId: "s-group", event: event("bob") }, bob.signal);
  const outcome = await Promise.race([his.then((v) => `decided: ${v.decision} (${v.note})`), cards.next(2).then(() => "a card for bob")]);
  bob.abort();
  await his.catch(() => undefined);
  expect(outcome).toBe("a card for bob");
});

/** Two threads (Slack threads, Telegram forum topics) of one group chat: their grants are their own, unless threads share the chat's session. */
for (const threadsShareChat of [false, true]) {
  it(`'Always' pressed in one thread ${threadsShareChat ? "covers the chat's other threads under THREAD_SESSIONS=parent" : "does not cover another thread of the chat (THREAD_SESSIONS=own)"}`, async () => {
    const cards = new Cards();
    const service = new ApprovalService({
      store: new ApprovalStore(t.db),
      kv: new KvStore(t.db),
      transport: cards,
      owner: "probe",
      timeoutMs: 3_600_000,
      approvers: "anyone",
      mayApprove: async () => true,
      threadsShareChat,
    });
    const chatId = threadsShareChat ? "-100900" : "-100901";
    const inThread = (threadId: string): MessageEvent => ({
      ...event("alice"),
      origin: { platform: "telegram", chatId, senderId: "alice", senderName: "alice" },
      replyTo: { ...replyTo, chatId, threadId },
    });
    const call = { id: "t1", name: "files__write_file", arguments: '{"path":"/srv/y","content":"1"}' };
    const first = service.ask(call, "files", { sessionId: "s-a", event: inThread("11") }, new AbortController().signal);
    const card = await cards.next(1);
    expect((await service.click({ id: card.id, action: "always", platform: "telegram", botId: "bot", chatId, senderId: "alice", isAdmin: false })).ok).toBe(
      true,
    );
    expect((await first).decision).toBe("approve");

    const other = new AbortController();
    const second = service.ask({ ...call, id: "t2" }, "files", { sessionId: "s-b", event: inThread("22") }, other.signal);
    const outcome = await Promise.race([second.then((v) => `decided: ${v.decision}`), cards.next(2).then(() => "a card")]);
    other.abort();
    await second.catch(() => undefined);
    expect(outcome).toBe(threadsShareChat ? "decided: approve" : "a card");
  });
}

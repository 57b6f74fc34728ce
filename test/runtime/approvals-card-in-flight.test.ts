/**
 * An approval whose card is still on its way (a 429 waited out, a slow
 * platform) when the turn is aborted: the wait ends at once, whatever the
 * card's delivery does, and a card shown after the decision is edited to it
 * rather than keeping buttons nobody can use. CI once hung in `App.stop()`
 * here: the abort came before the service listened for it, and the verdict
 * never settled.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalCard } from "../../src/runtime/approvals/card.js";
import type { CardTransport } from "../../src/runtime/approvals/options.js";
import { ApprovalService } from "../../src/runtime/approvals/service.js";
import type { MessageEvent } from "../../src/runtime/events.js";
import { TurnAbandoned } from "../../src/runtime/turn.js";
import { ApprovalStore } from "../../src/store/approvals.js";
import type { ReplyAddress } from "../../src/store/codecs.js";
import { KvStore } from "../../src/store/kv.js";
import { openTestDb, type TestDb } from "../support/db.js";

/** A transport whose cards arrive only when the test says so. */
class HeldTransport implements CardTransport {
  readonly shown: ApprovalCard[] = [];
  readonly edits: Array<{ messageId: string; card: ApprovalCard }> = [];
  #release: Array<(id: string | undefined) => void> = [];
  #fail: Array<(err: Error) => void> = [];
  show(_to: ReplyAddress, card: ApprovalCard): Promise<string | undefined> {
    this.shown.push(card);
    return new Promise((resolve, reject) => {
      this.#release.push(resolve);
      this.#fail.push(reject);
    });
  }
  async update(_to: ReplyAddress, messageId: string, card: ApprovalCard): Promise<void> {
    this.edits.push({ messageId, card });
  }
  deliver(id: string | undefined): void {
    this.#release.shift()?.(id);
    this.#fail.shift();
  }
  refuse(err: Error): void {
    this.#release.shift();
    this.#fail.shift()?.(err);
  }
}

const replyTo: ReplyAddress = { platform: "console", botId: "bot", chatId: "dm:ann", kind: "private" };
const event = (): MessageEvent => ({
  type: "message",
  text: "use the clock",
  respond: true,
  origin: { platform: "console", chatId: "dm:ann", senderId: "ann" },
  replyTo,
  conversation: { agentId: "bot", userId: "u-ann", channel: "console:bot:dm:ann" },
  receivedAt: new Date(),
});

describe("an approval whose card is still on its way", () => {
  let t: TestDb;
  let store: ApprovalStore;
  beforeAll(async () => {
    t = await openTestDb("sqlite");
    store = new ApprovalStore(t.db);
  });
  afterAll(async () => {
    await t?.close();
  });

  const service = (transport: CardTransport) =>
    new ApprovalService({
      store,
      kv: new KvStore(t.db),
      transport,
      owner: "this-process",
      timeoutMs: 3_600_000,
      approvers: "requester",
      mayApprove: async () => true,
    });
  const call = { id: "call-1", name: "current_time", arguments: '{"timezone":"UTC"}' };

  for (const [how, reason] of [
    ["a stop (the turn abandoned)", () => new TurnAbandoned()],
    ["/stop (the turn aborted)", () => new Error("stopped")],
  ] as const) {
    it(`${how} while the card is held ends the wait; the card, once shown, says so`, async () => {
      const transport = new HeldTransport();
      const approvals = service(transport);
      const abort = new AbortController();
      const verdict = approvals.ask(call, undefined, { sessionId: `s-${how}`, event: event() }, abort.signal);
      await expect.poll(() => transport.shown.length).toBe(1);
      abort.abort(reason());
      // Settles with the card still undelivered: before the fix this never settled.
      await expect(verdict).resolves.toMatchObject({ decision: "deny" });
      expect(approvals.waiting).toBe(0);
      transport.deliver("m-1");
      await expect.poll(() => transport.edits.length).toBe(1);
      expect(transport.edits[0]!.messageId).toBe("m-1");
      expect(transport.edits[0]!.card.state).toBe(reason() instanceof TurnAbandoned ? "expired" : "cancelled");
      const rec = (await store.get(transport.shown[0]!.id))!;
      expect(rec.status).toBe(reason() instanceof TurnAbandoned ? "expired" : "cancelled");
      expect(rec.cardMessageId).toBe("m-1");
    });
  }

  it("an abort that came before the card was asked for is not missed", async () => {
    const transport = new HeldTransport();
    const approvals = service(transport);
    const abort = new AbortController();
    abort.abort(new TurnAbandoned());
    await expect(approvals.ask(call, undefined, { sessionId: "s-early", event: event() }, abort.signal)).resolves.toMatchObject({ decision: "deny" });
    transport.refuse(new Error("the platform went away"));
    expect(approvals.waiting).toBe(0);
  });

  it("a card delivered normally still waits for the click, and the click edits it", async () => {
    const transport = new HeldTransport();
    const approvals = service(transport);
    const verdict = approvals.ask(call, undefined, { sessionId: "s-ok", event: event() }, new AbortController().signal);
    await expect.poll(() => transport.shown.length).toBe(1);
    transport.deliver("m-2");
    await expect.poll(async () => (await store.get(transport.shown[0]!.id))?.cardMessageId).toBe("m-2");
    const id = transport.shown[0]!.id;
    const clicked = await approvals.click({ id, action: "approve", platform: "console", botId: "bot", chatId: "dm:ann", senderId: "ann", isAdmin: false });
    expect(clicked.ok).toBe(true);
    await expect(verdict).resolves.toMatchObject({ decision: "approve" });
    expect(transport.edits.map((e) => e.messageId)).toEqual(["m-2"]);
  });
});

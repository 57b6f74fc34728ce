import { describe, expect, it } from "vitest";
import { KeyedQueue } from "../src/keyed-queue.js";

/** A promise and its resolver, to hold a job open until the test lets it go. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe("KeyedQueue", () => {
  it("runs one key's jobs one at a time in queued order, other keys meanwhile", async () => {
    const q = new KeyedQueue();
    const order: string[] = [];
    const held = gate();
    const a1 = q.run("a", async () => {
      order.push("a1 start");
      await held.promise;
      order.push("a1 end");
    });
    const a2 = q.run("a", () => order.push("a2"));
    const b1 = q.run("b", () => order.push("b1"));
    await b1;
    expect(order).toEqual(["a1 start", "b1"]);
    expect(q.busy("a")).toBe(true);
    held.open();
    await Promise.all([a1, a2]);
    expect(order).toEqual(["a1 start", "b1", "a1 end", "a2"]);
  });

  it("a failed job rejects to its caller and the key's next job still runs", async () => {
    const q = new KeyedQueue();
    const failed = q.run("a", () => Promise.reject(new Error("boom")));
    const next = q.run("a", () => "ran");
    await expect(failed).rejects.toThrow("boom");
    await expect(next).resolves.toBe("ran");
  });

  it("waits for `after` as well as the key's earlier jobs, even when `after` rejects", async () => {
    const q = new KeyedQueue();
    const held = gate();
    let ran = false;
    const job = q.run(
      "a",
      () => (ran = true),
      held.promise.then(() => Promise.reject(new Error("after failed"))),
    );
    await Promise.resolve();
    expect(ran).toBe(false);
    held.open();
    await job;
    expect(ran).toBe(true);
  });

  it("forgets a key once its work settles; idle() waits for work queued meanwhile", async () => {
    const q = new KeyedQueue<string>();
    const done: string[] = [];
    void q.run("a", async () => {
      void q.run("b", () => done.push("b"));
      done.push("a");
    });
    expect(q.size).toBe(1);
    await q.idle();
    expect(done).toEqual(["a", "b"]);
    expect(q.size).toBe(0);
    expect(q.busy("a")).toBe(false);
  });
});

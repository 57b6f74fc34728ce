import { afterEach, describe, expect, it } from "vitest";
import { Pairing, PAIRING_MAX_PENDING } from "../../src/gateway/inbound/pairing.js";
import { AccessStore } from "../../src/store/index.js";
import { PROVIDERS, openTestDb, type TestDb } from "../support/db.js";

describe.each(PROVIDERS)("pairing on %s", (provider) => {
  let t: TestDb;
  afterEach(async () => t?.close());

  it("a code expires after its hour and can no longer be approved", async () => {
    t = await openTestDb(provider);
    let now = new Date("2026-01-01T00:00:00Z");
    const p = new Pairing(new AccessStore(t.db), { now: () => now });
    const r = await p.request({ platform: "telegram", botId: "b", senderId: "1" });
    expect(r.kind).toBe("code");
    now = new Date(now.getTime() + 60 * 60 * 1000 + 1);
    expect(await p.list()).toEqual([]);
    expect(await p.approve((r as { code: string }).code)).toBe("expired");
    expect(await p.store.isGranted("telegram", "b", "1")).toBe(false);
    const again = await p.request({ platform: "telegram", botId: "b", senderId: "1" });
    expect(again.kind === "code" && again.reused).toBe(false);
  });

  it("keeps at most 3 pending per channel even when strangers race: each new request replaces the oldest", async () => {
    t = await openTestDb(provider);
    let now = new Date("2026-01-01T00:00:00Z");
    const p = new Pairing(new AccessStore(t.db), { now: () => now });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => p.request({ platform: "slack", botId: "b", senderId: `u${i}` })));
    // Nobody is refused: everyone gets a code, and the channel still holds only 3.
    expect(results.every((r) => r.kind === "code")).toBe(true);
    expect(await p.list()).toHaveLength(PAIRING_MAX_PENDING);
    expect((await p.request({ platform: "discord", botId: "b", senderId: "x" })).kind).toBe("code");
    now = new Date(now.getTime() + 2 * 60 * 60 * 1000);
    expect((await p.request({ platform: "slack", botId: "b", senderId: "late" })).kind).toBe("code");
  });

  it("three strangers filling the slots lock nobody out: a fourth sender replaces the oldest pending code", async () => {
    t = await openTestDb(provider);
    let now = new Date("2026-01-01T00:00:00Z");
    const p = new Pairing(new AccessStore(t.db), { now: () => now });
    const codes: string[] = [];
    for (const s of ["s1", "s2", "s3"]) {
      const r = await p.request({ platform: "telegram", botId: "b", senderId: s });
      codes.push((r as { code: string }).code);
      now = new Date(now.getTime() + 1000);
    }
    const fourth = await p.request({ platform: "telegram", botId: "b", senderId: "friend" });
    expect(fourth).toMatchObject({ kind: "code", reused: false });
    const pending = await p.list();
    expect(pending.map((r) => r.senderId)).toEqual(["s2", "s3", "friend"]);
    // The replaced code can no longer be approved; the others can.
    expect(await p.approve(codes[0]!)).toBe("replaced");
    expect(await p.store.isGranted("telegram", "b", "s1")).toBe(false);
    expect(await p.approve((fourth as { code: string }).code)).toMatchObject({ senderId: "friend", status: "approved" });
  });

  it("one sender gets a new code at most once per 10 minutes; asking again meanwhile gives the live code", async () => {
    t = await openTestDb(provider);
    let now = new Date("2026-01-01T00:00:00Z");
    const p = new Pairing(new AccessStore(t.db), { now: () => now });
    const req = (senderId: string) => p.request({ platform: "telegram", botId: "b", senderId });
    const first = await req("a");
    now = new Date(now.getTime() + 60_000);
    // Asking again while the code is live: the same code, no new slot used.
    expect(await req("a")).toMatchObject({ kind: "code", code: (first as { code: string }).code, reused: true });
    // Three others push a's code out...
    for (const s of ["x", "y", "z"]) {
      await req(s);
      now = new Date(now.getTime() + 1000);
    }
    expect((await p.list()).map((r) => r.senderId)).not.toContain("a");
    // ...and a, asking within 10 minutes of its last request, may not push someone else out in turn.
    const throttled = await req("a");
    expect(throttled).toEqual({ kind: "throttled", retryAt: new Date(Date.parse("2026-01-01T00:10:00Z")) });
    expect((await p.list()).map((r) => r.senderId)).toEqual(["x", "y", "z"]);
    // Ten minutes after its request, a gets a fresh code (replacing the oldest, x).
    now = new Date("2026-01-01T00:10:00Z");
    const again = await req("a");
    expect(again).toMatchObject({ kind: "code", reused: false });
    expect((again as { code: string }).code).not.toBe((first as { code: string }).code);
    expect((await p.list()).map((r) => r.senderId)).toEqual(["y", "z", "a"]);
  });

  it("approval grants the sender once; a used or unknown code is refused", async () => {
    t = await openTestDb(provider);
    const p = new Pairing(new AccessStore(t.db));
    const r = await p.request({ platform: "telegram", botId: "b", senderId: "9", displayName: "Nine" });
    const code = (r as { code: string }).code;
    expect(code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
    const ok = await p.approve(code.toLowerCase());
    expect(ok).toMatchObject({ senderId: "9", status: "approved" });
    expect(await p.store.isGranted("telegram", "b", "9")).toBe(true);
    expect(await p.approve(code)).toBe("decided");
    expect(await p.approve("NOPE2345")).toBe("missing");
  });
});

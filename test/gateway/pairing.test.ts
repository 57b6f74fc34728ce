import { afterEach, describe, expect, it } from "vitest";
import { Pairing, PAIRING_MAX_PENDING } from "../../src/gateway/pairing.js";
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

  it("holds the cap of 3 pending per channel even when strangers race, and frees a slot on expiry", async () => {
    t = await openTestDb(provider);
    let now = new Date("2026-01-01T00:00:00Z");
    const p = new Pairing(new AccessStore(t.db), { now: () => now });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => p.request({ platform: "slack", botId: "b", senderId: `u${i}` })));
    expect(results.filter((r) => r.kind === "code")).toHaveLength(PAIRING_MAX_PENDING);
    expect(results.filter((r) => r.kind === "full")).toHaveLength(10 - PAIRING_MAX_PENDING);
    expect((await p.request({ platform: "discord", botId: "b", senderId: "x" })).kind).toBe("code");
    now = new Date(now.getTime() + 2 * 60 * 60 * 1000);
    expect((await p.request({ platform: "slack", botId: "b", senderId: "late" })).kind).toBe("code");
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

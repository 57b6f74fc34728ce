import { describe, expect, it } from "vitest";
import { setBounded } from "../src/bounded.js";

describe("setBounded", () => {
  it("keeps at most cap entries, dropping the oldest insertion; updating a key never evicts", () => {
    const m = new Map<string, number>();
    for (let i = 0; i < 5; i++) setBounded(m, `k${i}`, i, 3);
    expect([...m.keys()]).toEqual(["k2", "k3", "k4"]);
    setBounded(m, "k3", 33, 3);
    expect([...m.entries()]).toEqual([
      ["k2", 2],
      ["k3", 33],
      ["k4", 4],
    ]);
  });
});

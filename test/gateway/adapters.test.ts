import { describe, expect, it } from "vitest";
import { AdapterRegistry } from "../../src/gateway/adapters.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

describe("AdapterRegistry", () => {
  it("finds an adapter by platform and bot id, and lists them in the order added", () => {
    const reg = new AdapterRegistry();
    const a = new MemoryAdapter("1");
    const b = new MemoryAdapter("2");
    reg.add(a);
    reg.add(b);
    expect(reg.get("telegram", "2")).toBe(b);
    expect(reg.get("telegram", "1")).toBe(a);
    expect(reg.get("slack", "1")).toBeUndefined();
    expect(reg.list()).toEqual([a, b]);
  });

  it("of two adapters under one platform and bot id, the first is found (as a search of the list found it)", () => {
    const reg = new AdapterRegistry();
    const first = new MemoryAdapter("7");
    reg.add(first);
    reg.add(new MemoryAdapter("7"));
    expect(reg.get("telegram", "7")).toBe(first);
    expect(reg.list()).toHaveLength(2);
  });

  it("rekey files an adapter under the bot id it learned at login, and no longer under the one it had", () => {
    const reg = new AdapterRegistry();
    const a = new MemoryAdapter("");
    reg.add(a);
    expect(reg.get("telegram", "")).toBe(a);
    (a as { botId: string }).botId = "U42";
    expect(reg.get("telegram", "U42")).toBeUndefined();
    reg.rekey(a);
    expect(reg.get("telegram", "U42")).toBe(a);
    expect(reg.get("telegram", "")).toBeUndefined();
    expect(reg.list()).toEqual([a]);
  });
});

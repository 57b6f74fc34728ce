/**
 * The environment is parsed once a process, so loadConfig skips zod's compiled
 * fast path: generating code for the whole object schema cost more than the
 * parse itself (about 10 ms of every start and CLI call). Its own file, so the
 * schema has never been parsed before in this module graph.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";

describe("loadConfig's parse", () => {
  it("generates no code (no new Function), and still parses and refuses as before", () => {
    const real = globalThis.Function;
    let made = 0;
    globalThis.Function = new Proxy(real, {
      construct(target, args) {
        made++;
        return Reflect.construct(target, args);
      },
    });
    let config: ReturnType<typeof loadConfig>;
    try {
      config = loadConfig({ DATABASE_URL: "file:/tmp/x.db", HTTP_PORT: "8081", TELEGRAM_BOT_TOKEN: "123:abc" });
      expect(() => loadConfig({ HTTP_PORT: "not a port" })).toThrow(/HTTP_PORT/);
    } finally {
      globalThis.Function = real;
    }
    expect(made).toBe(0);
    expect(config.HTTP_PORT).toBe(8081);
    expect(config.TELEGRAM_BOT_TOKEN).toBe("123:abc");
  });
});

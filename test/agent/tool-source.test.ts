import { describe, expect, it } from "vitest";
import { McpToolSource } from "../../src/agent/mcp/source.js";
import { builtinToolSource } from "../../src/agent/tool-source.js";
import { builtinTools } from "../../src/agent/tools.js";
import { noopLog } from "../../src/agent/types.js";
import { sessionInfo as session } from "../support/runtime.js";

const chat = { platform: "telegram", chatId: "1" };

describe("tool sources", () => {
  it("the built-ins are built for the asking session, and only builtinTools rules decide their policy (a namespaced name is an MCP server's)", () => {
    const asked: string[] = [];
    const source = builtinToolSource(
      (s) => {
        asked.push(s.id);
        return builtinTools().list();
      },
      { current_time: { policy: "deny" }, files__read: { policy: "auto" }, search_sessions: { policy: "auto", chats: ["telegram:2"] } },
    );
    expect(source.tools(session("s1")).map((t) => t.name)).toEqual(["current_time"]);
    expect(asked).toEqual(["s1"]);
    expect(source.policyOf("current_time", chat)).toBe("deny");
    // A rule limited to other chats denies here; no rule leaves the tool's own default to the caller.
    expect(source.policyOf("search_sessions", chat)).toBe("deny");
    expect(source.policyOf("schedule_message", chat)).toBeUndefined();
    expect(source.policyOf("files__read", chat)).toBeUndefined();
    expect(source.status()).toEqual([]);
  });

  it("the MCP servers offer nothing and decide nothing before they start, and a source without servers starts nothing", async () => {
    const config = {
      servers: [{ name: "files", kind: "http" as const, url: "http://127.0.0.1:9/mcp", tools: { read: { policy: "auto" as const } } }],
      builtinTools: {},
    };
    const mcp = new McpToolSource(config, { log: noopLog, callTimeoutMs: 1000 });
    expect(mcp.tools()).toEqual([]);
    expect(mcp.policyOf("files__read", chat)).toBeUndefined();
    expect(mcp.status()).toEqual([]);
    const empty = new McpToolSource({ servers: [], builtinTools: {} }, { log: noopLog, callTimeoutMs: 1000 });
    await empty.start({ waitMs: 0 });
    expect(empty.status()).toEqual([]);
    await mcp.stop();
  });
});

/** MCP_CONFIG parsing and tool policies: no server is started (test/agent/mcp.slow.test.ts runs real ones). */
import { describe, expect, it } from "vitest";
import { McpHub, parseMcpConfig } from "../../src/agent/mcp/index.js";

describe("MCP_CONFIG", () => {
  it("reads the mcpServers shape with policies per server and per tool, limited to chats", () => {
    const c = parseMcpConfig({
      mcpServers: {
        files: {
          command: "npx",
          args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
          policy: "auto",
          tools: { write_file: "ask", delete: { policy: "deny" } },
        },
        web: { url: "https://tools.example.com/mcp", headers: { authorization: "Bearer x" }, chats: ["slack:C123"], policy: "auto" },
      },
      builtinTools: { current_time: "ask" },
    });
    const hub = new McpHub(c);
    const dm = { platform: "telegram", chatId: "42" };
    expect(hub.policyOf("files__read_file", dm)).toBe("auto");
    expect(hub.policyOf("files__write_file", dm)).toBe("ask");
    expect(hub.policyOf("files__delete", dm)).toBe("deny");
    expect(hub.policyOf("web__search", { platform: "slack", chatId: "C123" })).toBe("auto");
    expect(hub.policyOf("web__search", dm)).toBe("deny");
    expect(hub.policyOf("current_time", dm)).toBeUndefined();
    expect(c.builtinTools).toEqual({ current_time: { policy: "ask" } });
  });

  it("a bad file names MCP_CONFIG and what is wrong", () => {
    expect(() => parseMcpConfig({ mcpServers: { "bad name!": { command: "x" } } })).toThrow(/MCP_CONFIG is invalid at mcpServers/);
    expect(() => parseMcpConfig({ mcpServers: { a: { command: "x", policy: "maybe" } } })).toThrow(/MCP_CONFIG is invalid/);
    expect(() => parseMcpConfig({ mcpServers: { a: { args: [] } } })).toThrow(/MCP_CONFIG is invalid/);
  });

  it.each([
    [{ mcpServers: { fs: { comand: "npx" } } }, 'at mcpServers.fs.command: is required (string); "comand" is not a field here (a typo for it?)'],
    [{ mcpServers: { fs: { command: "npx", args: "-y" } } }, "at mcpServers.fs.args: Invalid input: expected array, received string"],
    [{ mcpServers: { fs: { command: "npx", policy: "allow" } } }, 'at mcpServers.fs.policy: Invalid option: expected one of "auto"|"ask"|"deny"'],
    [{ mcpServers: { "bad name": { command: "x" } } }, "at mcpServers.bad name: has an invalid key: a server name is 1-32 letters, digits or '-'"],
    [{ mcpservers: {} }, 'at the top level: has unknown field "mcpservers": remove or correct it'],
  ])("names the field and the fix for %j", (json, expected) => {
    expect(() => parseMcpConfig(json)).toThrow(`MCP_CONFIG is invalid ${expected}`);
  });
});

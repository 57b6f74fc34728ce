/**
 * Probe: MCP_CONFIG's policies are looked up by the tool's name as the MCP
 * server lists it. A server's tool named like an Object.prototype member
 * (`constructor`, `toString`, `__proto__`, ...) must get its server's rule
 * like any other tool: `deny` stays deny, and a rule limited to `chats`
 * denies it everywhere else. (The server's listing is the server's to say:
 * a remote MCP server chooses its own tool names.)
 */
import { expect, it } from "vitest";
import { McpHub, parseMcpConfig } from "../../../src/agent/mcp/index.js";

it.each(["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"])("a tool named %s gets its server's policy, not the 'ask' fallback", (tool) => {
  const c = parseMcpConfig({
    mcpServers: {
      locked: { url: "https://tools.example.com/mcp", policy: "deny" },
      onechan: { url: "https://other.example.com/mcp", policy: "auto", chats: ["slack:C123"] },
    },
  });
  const hub = new McpHub(c);
  const dm = { platform: "telegram", chatId: "42" };
  // A server denied as a whole: every tool it lists is denied.
  expect(hub.policyOf("locked__plain", dm)).toBe("deny");
  expect(hub.policyOf(`locked__${tool}`, dm)).toBe("deny");
  // A server limited to one channel: denied in any other chat.
  expect(hub.policyOf("onechan__plain", dm)).toBe("deny");
  expect(hub.policyOf(`onechan__${tool}`, dm)).toBe("deny");
});

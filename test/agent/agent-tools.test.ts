/**
 * An agent's tool rules (src/agent/agent-tools.ts): `tools` patterns set a
 * policy per name, first match in the file's order; `deny` is not offered;
 * `mcpServers` limits which servers' tools are offered; no rule at all leaves
 * the registry as it is.
 */
import { describe, expect, it } from "vitest";
import { agentToolRules, globToRegExp } from "../../src/agent/agent-tools.js";
import { toolRegistry, type Tool } from "../../src/agent/tools.js";

const tool = (name: string, server?: string): Tool =>
  ({ name, description: name, parameters: { type: "object" }, run: async () => "", ...(server && { server }) }) as unknown as Tool;
const all = toolRegistry([tool("current_time"), tool("search_sessions"), tool("docs__search", "docs"), tool("docs__read", "docs"), tool("repo__grep", "repo")]);

describe("agent tool rules", () => {
  it("globs: * is any run of characters, everything else literal", () => {
    expect(globToRegExp("docs__*").test("docs__search")).toBe(true);
    expect(globToRegExp("docs__*").test("xdocs__search")).toBe(false);
    expect(globToRegExp("a.b").test("axb")).toBe(false);
    expect(globToRegExp("*").test("")).toBe(true);
  });

  it("the first matching pattern decides; deny is not offered", () => {
    const r = agentToolRules({ tools: { docs__read: "ask", "docs__*": "auto", "*": "deny" } });
    expect(r.policyOf("docs__read")).toBe("ask");
    expect(r.policyOf("docs__search")).toBe("auto");
    expect(r.policyOf("current_time")).toBe("deny");
    expect(r.narrow(all).names()).toEqual(["docs__search", "docs__read"]);
  });

  it("mcpServers limits the servers; built-ins stay, unnamed tools keep the gateway's policy", () => {
    const r = agentToolRules({ mcpServers: ["repo"] });
    expect(r.narrow(all).names()).toEqual(["current_time", "search_sessions", "repo__grep"]);
    expect(r.policyOf("repo__grep")).toBeUndefined();
  });

  it("an empty mcpServers list offers no server's tool", () => {
    expect(agentToolRules({ mcpServers: [] }).narrow(all).names()).toEqual(["current_time", "search_sessions"]);
  });

  it("no rules: the registry unchanged", () => {
    const r = agentToolRules({});
    expect(r.narrow(all)).toBe(all);
    expect(r.policyOf("anything")).toBeUndefined();
  });
});

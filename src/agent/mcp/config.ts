/**
 * MCP_CONFIG: the `mcpServers` shape the ecosystem already uses (Claude
 * Desktop, Cursor), a name → `{command, args, env}` (stdio) or `{url,
 * headers}` (Streamable HTTP), plus Switchboard's policies: per server and
 * per tool `auto`, `ask` (the default) or `deny`, optionally limited to
 * listed chats. `builtinTools` overrides the built-in tools' own defaults.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { namedIssue } from "../../validation-message.js";
import { TOOL_POLICIES, type PolicyRule } from "../tool-policy.js";

const Policy = z.enum(TOOL_POLICIES);
const Rule = z.union([Policy.transform((policy) => ({ policy })), z.object({ policy: Policy, chats: z.array(z.string().min(1)).optional() }).strict()]);
const SERVER_NAME = /^[a-zA-Z0-9-]{1,32}$/;

const Common = {
  policy: Policy.optional(),
  chats: z.array(z.string().min(1)).optional(),
  tools: z.record(z.string(), Rule).optional(),
  /** Per-call timeout in ms for this server's tools. */
  timeoutMs: z.number().int().min(100).max(3_600_000).optional(),
  disabled: z.boolean().optional(),
};
const Stdio = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
    ...Common,
  })
  .strict();
const Http = z.object({ url: z.url(), headers: z.record(z.string(), z.string()).optional(), ...Common }).strict();

const File = z
  .object({
    mcpServers: z
      .record(z.string().regex(SERVER_NAME, "a server name is 1-32 letters, digits or '-' (tools are named <server>__<tool>)"), z.union([Stdio, Http]))
      .default({}),
    builtinTools: z.record(z.string(), Rule).optional(),
  })
  .strict();

export type McpServerConfig =
  | {
      name: string;
      kind: "stdio";
      command: string;
      args: string[];
      env?: Record<string, string>;
      cwd?: string;
      rule?: PolicyRule;
      tools: Record<string, PolicyRule>;
      timeoutMs?: number;
    }
  | { name: string; kind: "http"; url: string; headers?: Record<string, string>; rule?: PolicyRule; tools: Record<string, PolicyRule>; timeoutMs?: number };

export interface McpConfig {
  servers: McpServerConfig[];
  builtinTools: Record<string, PolicyRule>;
}

export class McpConfigError extends Error {
  override readonly name = "McpConfigError";
}

export function parseMcpConfig(json: unknown, where = "MCP_CONFIG"): McpConfig {
  const r = File.safeParse(json);
  if (!r.success) {
    const i = namedIssue(r.error.issues)!;
    throw new McpConfigError(
      `${where} is invalid at ${i.path || "the top level"}: ${i.message}. Expected {"mcpServers": {"<name>": {"command": "...", "args": []} or {"url": "https://..."}}}.`,
    );
  }
  const servers: McpServerConfig[] = [];
  for (const [name, s] of Object.entries(r.data.mcpServers)) {
    if (s.disabled) continue;
    const rule = s.policy ? { policy: s.policy, ...(s.chats && { chats: s.chats }) } : undefined;
    const base = { name, tools: s.tools ?? {}, ...(rule && { rule }), ...(s.timeoutMs !== undefined && { timeoutMs: s.timeoutMs }) };
    if ("command" in s) servers.push({ ...base, kind: "stdio", command: s.command, args: s.args, ...(s.env && { env: s.env }), ...(s.cwd && { cwd: s.cwd }) });
    else servers.push({ ...base, kind: "http", url: s.url, ...(s.headers && { headers: s.headers }) });
  }
  return { servers, builtinTools: r.data.builtinTools ?? {} };
}

/** Reads the file MCP_CONFIG names. A missing or bad file stops the start with what to fix. */
export function loadMcpConfig(path: string): McpConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new McpConfigError(
      `MCP_CONFIG names ${path}, which cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"}); point it at a JSON file with "mcpServers".`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new McpConfigError(`MCP_CONFIG file ${path} is not valid JSON; check it with: node -e 'JSON.parse(require("fs").readFileSync("${path}","utf8"))'.`);
  }
  return parseMcpConfig(json, `MCP_CONFIG file ${path}`);
}

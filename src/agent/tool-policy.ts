/**
 * Whether a tool call runs at once (`auto`), waits for a person in the chat
 * (`ask`) or never runs (`deny`). A built-in tool declares its own default
 * (`Tool.policy`); the operator's configuration (MCP_CONFIG) overrides it per
 * server and per tool, optionally only in listed chats.
 */
export const TOOL_POLICIES = ["auto", "ask", "deny"] as const;
export type ToolPolicy = (typeof TOOL_POLICIES)[number];

/** A policy, limited to `chats` when given (chat keys such as `telegram:<chatId>`, see chatPolicyKey). */
export interface PolicyRule {
  policy: ToolPolicy;
  /** The rule applies only in these chats; elsewhere the tool is denied. */
  chats?: string[];
}

/** Where a call is asked from, as policies name it. */
export interface PolicyChat {
  platform: string;
  chatId: string;
}

/** `platform:chatId`: how a chat is named in a policy's `chats` list. */
export const chatPolicyKey = (c: PolicyChat) => `${c.platform}:${c.chatId}`;

/**
 * The policy for one call: the tool's rule, else its server's, else the
 * tool's declared default, else `ask`. A rule limited to chats denies
 * everywhere else (a tool meant for one channel is not offered in another).
 */
export function resolvePolicy(rules: { tool?: PolicyRule; server?: PolicyRule; declared?: ToolPolicy }, chat: PolicyChat): ToolPolicy {
  const rule = rules.tool ?? rules.server;
  if (rule) {
    if (rule.chats && !rule.chats.includes(chatPolicyKey(chat)) && !rule.chats.includes(chat.chatId)) return "deny";
    return rule.policy;
  }
  return rules.declared ?? "ask";
}

import type { z } from "zod";

type Issue = z.core.$ZodIssue;

/** The one problem to fix first: the dotted path to its field ("" for the whole value) and what is wrong there. */
export interface NamedIssue {
  path: string;
  message: string;
}

const joinPath = (path: readonly PropertyKey[]): string => path.map(String).join(".");
const isMissing = (i: Issue): boolean => i.code === "invalid_type" && /received undefined/.test(i.message);
const depth = (issues: readonly Issue[]): number => Math.max(...issues.map((i) => i.path.length));

/**
 * zod's first issue, made to name the field and the fix. zod says "Invalid input" for a value
 * that matches no branch of a union (an MCP server that is neither {command} nor {url}, an API
 * conversation that is neither a chat nor a session), and "Invalid key in record" for a bad
 * key; this opens those up to the branch that got furthest into the value (the shape the author
 * meant) and the key's own rule, says "required" for a missing field, and puts a misspelt field
 * next to the one it was probably meant to be.
 */
export function namedIssue(issues: readonly Issue[], base: readonly PropertyKey[] = []): NamedIssue | undefined {
  const issue = issues[0];
  if (!issue) return undefined;
  const path = [...base, ...issue.path];
  if (issue.code === "invalid_union" && issue.errors.length) {
    const branches = issue.errors.filter((e) => e.length);
    const closest = [...branches].sort((a, b) => depth(b) - depth(a) || a.length - b.length)[0];
    const inner = closest && namedIssue(closest, path);
    if (inner) return inner;
  }
  if (issue.code === "invalid_key" && issue.issues.length) {
    const inner = namedIssue(issue.issues, path);
    if (inner) return { path: inner.path, message: `has an invalid key: ${inner.message}` };
  }
  const unknown = issues.find((i) => i.code === "unrecognized_keys");
  const unknownKeys = unknown?.code === "unrecognized_keys" ? unknown.keys.map((k) => JSON.stringify(k)).join(", ") : undefined;
  if (isMissing(issue)) {
    const expected = issue.code === "invalid_type" ? ` (${issue.expected})` : "";
    const typo = unknownKeys ? `; ${unknownKeys} is not a field here (a typo for it?)` : "";
    return { path: joinPath(path), message: `is required${expected}${typo}` };
  }
  if (issue.code === "unrecognized_keys")
    return {
      path: joinPath(path),
      message: `has unknown field${issue.keys.length > 1 ? "s" : ""} ${unknownKeys}: remove or correct ${issue.keys.length > 1 ? "them" : "it"}`,
    };
  return { path: joinPath(path), message: issue.message };
}

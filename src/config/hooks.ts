import fs from "node:fs";
import { z } from "zod";
import { conversationRefSchema, type ConversationRef } from "./conversation-ref.js";
import { namedIssue } from "../validation-message.js";

/**
 * HOOKS_CONFIG: inbound webhooks (POST /hooks/<name>). Either a path to a
 * JSON file or the JSON itself (starting with "{"):
 *
 *   { "deploys": { "secret": "<32+ characters>",
 *                  "conversation": { "platform": "slack", "chat": "C0123ABCD" },
 *                  "prompt": "A deploy finished: {{json.service}} {{json.status}}. Tell the channel in one line." } }
 *
 * The prompt is a template: {{body}} is the request body as text (cut to
 * 8,000 characters), {{json.a.b}} a field of a JSON body (an array index is
 * a number: {{json.items.0.name}}), {{hook}} the hook's name and
 * {{delivery}} the delivery id. A placeholder that finds nothing is empty.
 */

export interface HookSpec {
  name: string;
  secret: string;
  conversation: ConversationRef;
  prompt: string;
  maxBodyBytes: number;
}

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const KNOWN = /^(body|hook|delivery|json(\.[A-Za-z0-9_-]+)+)$/;

const hookSchema = z.strictObject({
  secret: z.string().regex(/^[\x21-\x7e]{32,512}$/, "secret must be 32-512 printable characters without spaces (openssl rand -hex 32)"),
  conversation: conversationRefSchema,
  prompt: z
    .string()
    .min(1)
    .max(16_000)
    .superRefine((p, ctx) => {
      for (const m of p.matchAll(PLACEHOLDER))
        if (!KNOWN.test(m[1]!))
          ctx.addIssue({
            code: "custom",
            message: `prompt has an unknown placeholder {{${m[1]!.slice(0, 40)}}}: use {{body}}, {{json.<field>}}, {{hook}} or {{delivery}}`,
          });
    }),
  maxBodyBytes: z
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024)
    .default(64 * 1024),
});

const hooksSchema = z.record(z.string(), hookSchema);

export class HooksConfigError extends Error {}

/** Parses HOOKS_CONFIG (a file path or inline JSON). Errors name the hook and field, never a secret. */
export function parseHooksConfig(value: string | undefined): HookSpec[] {
  if (!value?.trim()) return [];
  const text = value.trim();
  let raw: string;
  if (text.startsWith("{")) raw = text;
  else {
    try {
      raw = fs.readFileSync(text, "utf8");
    } catch (err) {
      throw new HooksConfigError(
        `cannot read the file ${JSON.stringify(text.slice(0, 200))} (${(err as NodeJS.ErrnoException).code ?? "error"}): give a readable JSON file or the JSON itself`,
      );
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    // V8's message quotes the text around the error, which may be a secret: only the position is told.
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new HooksConfigError(`is not valid JSON${at ? ` (at character ${at})` : ""}: check the quotes and commas`);
  }
  const r = hooksSchema.safeParse(json);
  if (!r.success) {
    const issue = namedIssue(r.error.issues)!;
    throw new HooksConfigError(`hook ${issue.path}: ${issue.message}`);
  }
  const bySecret = new Map<string, string>();
  return Object.entries(r.data).map(([name, h]) => {
    if (!NAME.test(name)) throw new HooksConfigError(`hook name ${JSON.stringify(name.slice(0, 70))} must be 1-64 characters of a-z, 0-9, _ and -`);
    // The signature does not cover the hook's name: with one secret, a delivery captured for one hook is valid for the other.
    const twin = bySecret.get(h.secret);
    if (twin !== undefined) throw new HooksConfigError(`hook ${name} repeats the secret of hook ${twin}: give each hook its own (openssl rand -hex 32)`);
    bySecret.set(h.secret, name);
    return { name, ...h };
  });
}

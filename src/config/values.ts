import { z } from "zod";

/**
 * The value types of the configuration: each parses one environment variable
 * (text) and says what a good value looks like when it fails.
 */

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      const m = DURATION.exec(v.trim());
      if (!m) {
        ctx.addIssue({ code: "custom", message: `must be a duration such as 600s, 10m or 1h (got "${v}")` });
        return z.NEVER;
      }
      return Math.round(Number(m[1]) * UNIT_MS[m[2] ?? "s"]!);
    });

export const bool = (fallback: boolean) =>
  z
    .string()
    .default(String(fallback))
    .transform((v, ctx) => {
      const s = v.trim().toLowerCase();
      if (["1", "true", "yes", "on"].includes(s)) return true;
      if (["0", "false", "no", "off"].includes(s)) return false;
      ctx.addIssue({ code: "custom", message: `must be true or false (got "${v}")` });
      return z.NEVER;
    });

export const int = (fallback: number, min: number, max: number) =>
  z
    .string()
    .default(String(fallback))
    .transform((v, ctx) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: "custom", message: `must be a whole number from ${min} to ${max} (got "${v}")` });
        return z.NEVER;
      }
      return n;
    });

export const list = () =>
  z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    );

export const optionalString = () =>
  z
    .string()
    .optional()
    .transform((v) => (v && v.trim() ? v.trim() : undefined));

export const url = (what: string, opts: { trailingSlash?: "forbid" | "require" } = {}) =>
  optionalString().superRefine((v, ctx) => {
    if (v === undefined) return;
    let parsed: URL;
    try {
      parsed = new URL(v);
    } catch {
      ctx.addIssue({ code: "custom", message: `must be an absolute http(s) URL for ${what}` });
      return;
    }
    if (!/^https?:$/.test(parsed.protocol)) ctx.addIssue({ code: "custom", message: `must use http or https for ${what}` });
    if (opts.trailingSlash === "forbid" && v.endsWith("/")) ctx.addIssue({ code: "custom", message: `must not end with "/" (${what})` });
    if (opts.trailingSlash === "require" && !v.endsWith("/")) ctx.addIssue({ code: "custom", message: `must end with "/" (${what})` });
  });

/** An optional value that `parse` must accept: its `Refusal` (an error naming the fix) becomes the variable's message. */
export const parsedBy = (parse: (v: string | undefined) => unknown, Refusal: abstract new (...args: never[]) => Error) =>
  optionalString().superRefine((v, ctx) => {
    try {
      parse(v);
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      ctx.addIssue({ code: "custom", message: e.message });
    }
  });

/** An optional value that, when set, must match `re`; `fix` says what a good one looks like. */
export const matching = (re: RegExp, fix: string) =>
  optionalString().superRefine((v, ctx) => {
    if (v !== undefined && !re.test(v)) ctx.addIssue({ code: "custom", message: fix });
  });

/** An optional whole number (kept as text: the adapters read it so). */
export const wholeNumber = (fix: string) => matching(/^\d{1,6}$/, fix);

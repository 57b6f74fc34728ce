import { PLACEHOLDER } from "../../../config/hooks.js";

/** The prompt for one delivery: placeholders filled from the request. */
export function renderPrompt(template: string, ctx: { body: string; hook: string; delivery: string }): string {
  let json: unknown;
  let parsed = false;
  return template.replace(PLACEHOLDER, (_m, key: string) => {
    if (key === "body") return ctx.body.slice(0, 8000);
    if (key === "hook") return ctx.hook;
    if (key === "delivery") return ctx.delivery;
    if (!parsed) {
      parsed = true;
      try {
        json = JSON.parse(ctx.body);
      } catch {
        json = undefined;
      }
    }
    let v: unknown = json;
    for (const p of key.split(".").slice(1)) v = v !== null && typeof v === "object" && Object.hasOwn(v, p) ? (v as Record<string, unknown>)[p] : undefined;
    if (v === undefined || v === null) return "";
    if (typeof v === "string") return v.slice(0, 8000);
    try {
      return JSON.stringify(v).slice(0, 8000);
    } catch {
      // Nested deeper than the stack (JSON.parse is not recursive, JSON.stringify is): shown as a field that cannot be, empty.
      return "";
    }
  });
}

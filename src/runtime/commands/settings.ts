/** The session's settings: /model, /think, /temperature, /maxtokens (metadata the agent factory reads) and /persona. */
import { parseMaxOutputTokens, parseModelName, parseTemperature, parseThinkingLevel, METADATA_KEYS } from "../../agent/factory.js";
import type { CommandOptions, CommandSpec } from "./spec.js";

/** For /model under MODELS_ALLOWED: a valid name that is not on the list gets the list. */
export function allowedModel(v: string, allowed: readonly string[] | undefined): ReturnType<typeof parseModelName> {
  const r = parseModelName(v);
  if (!r.ok || !allowed?.length || allowed.includes(r.value)) return r;
  return { ok: false, error: `The model ${r.value} is not allowed here. Choose one of: ${allowed.join(", ")}.` };
}

/** A command that shows (no argument) or sets one metadata key, refusing what `parse` refuses. */
function setting(
  name: string,
  key: string,
  parse: (v: string) => { ok: true; value: unknown } | { ok: false; error: string },
  describe: string,
  hint = "",
): CommandSpec {
  return {
    name,
    summary: `set the ${describe}`,
    usage: `/${name} <value>`,
    async run(ctx) {
      if (!ctx.args) {
        await ctx.can.refresh();
        ctx.notify("info", `${describe}: ${String(ctx.session.metadata[key] ?? "(default)")}. Usage: /${name} <value>${hint}`);
        return;
      }
      const r = parse(ctx.args);
      if (!r.ok) {
        ctx.notify("error", r.error);
        return;
      }
      await ctx.session.setMetadata(key, r.value);
      ctx.notify("success", `${describe} set to ${String(r.value)}.`);
    },
  };
}

export function settingCommands(opts: Pick<CommandOptions, "personas" | "modelsAllowed">): CommandSpec[] {
  return [
    setting(
      "model",
      METADATA_KEYS.model,
      (v) => allowedModel(v, opts.modelsAllowed),
      "model",
      opts.modelsAllowed?.length ? ` Allowed: ${opts.modelsAllowed.join(", ")}.` : "",
    ),
    setting("think", METADATA_KEYS.thinkingLevel, parseThinkingLevel, "thinking level"),
    setting("temperature", METADATA_KEYS.temperature, parseTemperature, "temperature"),
    setting("maxtokens", METADATA_KEYS.maxOutputTokens, parseMaxOutputTokens, "max output tokens"),
    {
      name: "persona",
      summary: "set the persona (a named system prompt)",
      usage: "/persona <name>",
      async run(ctx) {
        const name = ctx.args.toLowerCase();
        if (!name) await ctx.can.refresh();
        if (!name || !opts.personas.has(name)) {
          ctx.notify(
            name ? "error" : "info",
            `${name ? `Unknown persona "${name}". ` : `persona: ${ctx.session.info.persona ?? "default"}. `}Available: ${opts.personas.names().join(", ")}.`,
          );
          return;
        }
        await ctx.session.setPersona(name);
        ctx.notify("success", `persona set to ${name}.`);
      },
    },
  ];
}

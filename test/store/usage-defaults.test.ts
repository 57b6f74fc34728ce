/**
 * A settled model call's row binds every column (src/store/usage.ts prepares the insert once),
 * so the defaults a caller leaves out are written by USAGE_DEFAULTS, not by the database. This
 * holds them to the schema's: a default changed in prisma/models.prisma and not here fails.
 */
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { USAGE_DEFAULTS } from "../../src/store/usage.js";

const SCHEMA = fileURLToPath(new URL("../../prisma/models.prisma", import.meta.url));

/** The `@default(...)` of each field of `model`, as written in the schema. */
function schemaDefaults(model: string): Map<string, string> {
  const text = fs.readFileSync(SCHEMA, "utf8");
  const block = new RegExp(`^model ${model} \\{\\n([\\s\\S]*?)^\\}`, "m").exec(text);
  if (!block) throw new Error(`model ${model} is not in ${SCHEMA}`);
  const out = new Map<string, string>();
  for (const line of block[1]!.split("\n")) {
    const m = /^\s*(\w+)\s+\w+\??\s.*@default\((.*)\)/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

/** A Prisma default literal as the value the row binds. */
function literal(text: string): unknown {
  if (text === "true" || text === "false") return text === "true";
  if (/^-?\d+$/.test(text)) return Number(text);
  if (/^"(?:[^"\\]|\\.)*"$/.test(text)) return JSON.parse(text);
  return { function: text };
}

describe("ModelUsage: the insert's defaults are the schema's", () => {
  const schema = schemaDefaults("ModelUsage");

  it("reads the schema's defaults (the parser finds them)", () => {
    expect(schema.get("priced")).toBe("true");
    expect(schema.get("sessionId")).toBe('""');
    expect(schema.get("at")).toBe("now()");
  });

  it("gives each column the schema's default value", () => {
    for (const [column, value] of Object.entries(USAGE_DEFAULTS)) {
      expect(schema.has(column), `${column} has no @default in the schema`).toBe(true);
      expect(literal(schema.get(column)!), column).toEqual(value);
    }
  });

  it("covers every column the schema gives a literal default (now() is the insert's own)", () => {
    const literals = [...schema].filter(([, d]) => !(literal(d) as { function?: string })?.function).map(([c]) => c);
    expect(Object.keys(USAGE_DEFAULTS).sort()).toEqual(literals.sort());
    expect(schema.get("at")).toBe("now()");
  });
});

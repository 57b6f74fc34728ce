import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "generated" ? [] : files(p);
    return /\.(ts|mts)$/.test(e.name) ? [p] : [];
  });
}

/** The files among `list` that call parseCommand (its definition is not a call). */
function callers(list: string[]): string[] {
  return list.filter((f) => /(?<!function\s+)\bparseCommand\s*\(/.test(fs.readFileSync(f, "utf8")));
}

describe("a command is parsed once (issue #27)", () => {
  it("parseCommand is called in one place in src/: where dispatch turns the envelope into an event", () => {
    expect(callers(files("src"))).toEqual([path.join("src", "gateway", "inbound", "dispatch.ts")]);
  });

  it("the check can fail: it sees a planted second call, and not the definition", () => {
    const planted = path.join("test", "fixtures-parse-once.tmp.ts");
    fs.writeFileSync(planted, `import { parseCommand } from "../src/runtime/commands/parse.js";\nexport const again = parseCommand(" /new");\n`);
    try {
      expect(callers([...files("src"), planted])).toEqual([path.join("src", "gateway", "inbound", "dispatch.ts"), planted]);
      expect(callers([path.join("src", "runtime", "commands", "parse.ts")])).toEqual([]);
    } finally {
      fs.rmSync(planted);
    }
  });
});

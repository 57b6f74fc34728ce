import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

function files(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "generated" ? [] : files(p);
    return /\.(ts|mts|js|mjs)$/.test(e.name) ? [p] : [];
  });
}

function imports(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  return [...text.matchAll(/(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1] ?? m[2]!);
}

const SDKS = /^(discord\.js|@discordjs\/|grammy|@grammyjs\/|@slack\/)/;
const LAYERS = ["store", "session", "agent", "runtime", "gateway"] as const;

describe("layer boundaries (DESIGN.md)", () => {
  it("nothing under src/ imports a platform SDK", () => {
    const offenders = files("src").flatMap((f) => imports(f).filter((i) => SDKS.test(i)).map((i) => `${f} -> ${i}`));
    expect(offenders).toEqual([]);
  });

  it("nothing under adapters/ imports Prisma or src/store", () => {
    const offenders = files("adapters").flatMap((f) =>
      imports(f).filter((i) => /^@prisma\/|^prisma|\/store(\/|$)|generated\/(sqlite|postgresql)/.test(i)).map((i) => `${f} -> ${i}`),
    );
    expect(offenders).toEqual([]);
  });

  it("imports under src/ only point down the layers", () => {
    const offenders: string[] = [];
    for (const [rank, layer] of LAYERS.entries()) {
      for (const f of files(path.join("src", layer))) {
        for (const i of imports(f).filter((x) => x.startsWith("."))) {
          const target = path.relative("src", path.resolve(path.dirname(f), i)).split(path.sep)[0]!;
          const targetRank = LAYERS.indexOf(target as (typeof LAYERS)[number]);
          if (targetRank > rank) offenders.push(`${f} -> ${i}`);
          if (["cli.ts", "main.ts", "cli", "doctor"].includes(target)) offenders.push(`${f} -> ${i}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it("the checks above can fail: they see a forbidden import in a sample", () => {
    const sample = path.join("test", "fixtures-boundary.tmp.ts");
    fs.writeFileSync(sample, `import { Bot } from "grammy";\nexport const x = await import("@prisma/client");\n`);
    try {
      expect(imports(sample)).toEqual(["grammy", "@prisma/client"]);
    } finally {
      fs.rmSync(sample);
    }
  });
});

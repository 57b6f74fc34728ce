import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/** Every source file under `dir`, the generated clients left out. */
function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "generated" ? [] : sources(p);
    return /\.(ts|mts)$/.test(e.name) ? [p] : [];
  });
}

const PRISMA_CLIENT = /^@prisma\/(client|adapter-)|generated\/(sqlite|postgresql)\//;

/**
 * The stores run on Kysely and the drivers alone (docs/DESIGN.md, "Data
 * access"): a gateway, the CLI and the doctor never load Prisma's client
 * (about 90 MB). Only the tests' checks use it (test/support/prisma.ts).
 */
describe("data access", () => {
  it("nothing under src/ imports Prisma's client, its driver adapters or the generated clients", () => {
    const offenders = sources("src").flatMap((f) =>
      [...fs.readFileSync(f, "utf8").matchAll(/(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)]
        .map((m) => m[1] ?? m[2]!)
        .filter((i) => PRISMA_CLIENT.test(i))
        .map((i) => `${f} -> ${i}`),
    );
    expect(offenders).toEqual([]);
  });
});

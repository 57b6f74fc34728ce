import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type CodeShape, codeShape, describeShape, longFunctions } from "../scripts/code-shape.mjs";

/**
 * Files still over a limit because their helper's branch of issue #27 has not merged yet (the
 * store, runtime, session and gateway slices). Temporary: the lead empties this after merging,
 * and an entry that is no longer over a limit fails the last test below, so the list only shrinks.
 */
const PENDING: readonly string[] = [];

/** `n` lines of statements (no newline after the last). */
const statements = (n: number, indent = "  ") => Array.from({ length: n }, (_, i) => `${indent}void ${i};`).join("\n");
/** A function declaration `lines` long, braces included. */
const fn = (name: string, lines: number) => `function ${name}() {\n${statements(lines - 2)}\n}`;

let repo: CodeShape | undefined;
/** The shape of this checkout's src/ and adapters/ (parsed once for the tests that read it). */
const repoShape = () => (repo ??= codeShape({ dirs: ["src", "adapters"] }));

describe("code shape (issue #27: no file over 400 lines, no function over 80)", () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "code-shape-"));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("src/ and adapters/ have no file over 400 lines and no function over 80", () => {
    const shape = repoShape();
    const over = describeShape({
      files: shape.files.filter((f) => !PENDING.includes(f.path)),
      functions: shape.functions.filter((f) => !PENDING.includes(f.path)),
    });
    expect(over).toEqual([]);
  });

  it("reports a planted 401-line file and an 81-line function, and not 400 and 80", () => {
    fs.mkdirSync(path.join(tmp, "src", "store", "generated"), { recursive: true });
    fs.mkdirSync(path.join(tmp, "adapters", "x"), { recursive: true });
    // 401 lines, every function in it 80 lines or fewer.
    fs.writeFileSync(path.join(tmp, "src", "long.ts"), `${statements(401, "")}\n`);
    fs.writeFileSync(path.join(tmp, "src", "fits.ts"), `${statements(400, "")}\n`);
    fs.writeFileSync(path.join(tmp, "src", "fns.ts"), `/** A doc comment does not count. */\n${fn("tooLong", 81)}\n${fn("fits", 80)}\n`);
    fs.writeFileSync(
      path.join(tmp, "adapters", "x", "page.js"),
      [
        `const arrow = () => {\n${statements(80)}\n};`,
        `class Sink {\n  send() {\n${statements(79, "    ")}\n  }\n}`,
        `document.addEventListener("load", function () {\n${statements(79)}\n});`,
        "",
      ].join("\n"),
    );
    fs.writeFileSync(path.join(tmp, "src", "store", "generated", "client.ts"), `${fn("generated", 500)}\n`);
    fs.writeFileSync(path.join(tmp, "src", "notes.md"), `${statements(500, "")}\n`);

    const shape = codeShape({ dirs: ["src", "adapters"], base: tmp });
    expect(shape.files).toEqual([{ path: "src/long.ts", lines: 401 }]);
    expect(shape.functions).toEqual([
      { path: "src/fns.ts", line: 2, name: "tooLong", lines: 81 },
      { path: "adapters/x/page.js", line: 1, name: "arrow", lines: 82 },
      { path: "adapters/x/page.js", line: 84, name: "send", lines: 81 },
      { path: "adapters/x/page.js", line: 166, name: "(callback of addEventListener)", lines: 81 },
    ]);
  });

  it("counts a class's methods one by one, not the class body, and skips an overload signature", () => {
    const methods = Array.from({ length: 3 }, (_, i) => `  m${i}() {\n${statements(40, "    ")}\n  }`).join("\n");
    const text = `class Big {\n${methods}\n}\nexport function f(a: string): string;\nexport function f(a: string) {\n  return a;\n}\n`;
    expect(longFunctions("big.ts", text)).toEqual([]);
    expect(longFunctions("big.ts", text, 41)).toEqual([
      { path: "big.ts", line: 2, name: "m0", lines: 42 },
      { path: "big.ts", line: 44, name: "m1", lines: 42 },
      { path: "big.ts", line: 86, name: "m2", lines: 42 },
    ]);
  });

  it("every PENDING entry is still over a limit (remove an entry once its branch has merged)", () => {
    const shape = repoShape();
    const over = new Set([...shape.files, ...shape.functions].map((f) => f.path));
    expect(PENDING.filter((p) => !over.has(p))).toEqual([]);
  });
});

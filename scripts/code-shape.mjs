// The shape the code keeps (docs/DESIGN.md, issue #27): no file in src/ or adapters/ over 400
// lines, no function over 80. Lists every file and every function over its limit;
// test/code-shape.test.ts runs it over src/ and adapters/ and expects nothing.
// `node scripts/code-shape.mjs [dir...]` (default: src adapters) prints what it finds and exits 1 if
// anything is over.
//
// A function is a declaration, a method (constructors and accessors included), an arrow or a
// function expression, with a body (an overload signature has none); it counts from the line its
// code starts on (after its doc comment) to the line it ends on. A class body is not a function:
// its methods count one by one. Nested functions count on their own and inside the one around them.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 80;

const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;
// Written by `npm run db:generate` (Prisma and prisma-kysely), not by hand.
const GENERATED = path.join("src", "store", "generated");

/** Every source file under `dir` (a path relative to `base`), as paths relative to `base`, sorted. */
function sourceFiles(base, dir) {
  const abs = path.resolve(base, dir);
  if (!fs.existsSync(abs)) return [];
  if (fs.statSync(abs).isFile()) return SOURCE.test(abs) ? [path.relative(base, abs)] : [];
  return fs
    .readdirSync(abs, { withFileTypes: true })
    .filter((e) => e.name !== "node_modules")
    .flatMap((e) => {
      const rel = path.relative(base, path.join(abs, e.name));
      if (rel === GENERATED) return [];
      if (e.isDirectory()) return sourceFiles(base, rel);
      return SOURCE.test(e.name) ? [rel] : [];
    })
    .sort();
}

/** Lines as `wc -l` counts them, plus a last line without its newline. */
function lineCount(text) {
  if (text === "") return 0;
  const newlines = text.split("\n").length - 1;
  return text.endsWith("\n") ? newlines : newlines + 1;
}

function isFunction(node) {
  return (
    (ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node)) &&
    node.body !== undefined
  );
}

/** What a reader would call the function: its own name, or the name it is bound to. */
function functionName(node, source) {
  if (node.name) return node.name.getText(source);
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name) {
    return parent.name.getText(source);
  }
  if (ts.isCallExpression(parent) && ts.isPropertyAccessExpression(parent.expression)) return `(callback of ${parent.expression.name.text})`;
  return "(anonymous)";
}

function scriptKind(file) {
  return /\.(js|mjs|cjs)$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
}

/** The functions of one file's text that are over `maxLines`, in source order. */
export function longFunctions(file, text, maxLines = MAX_FUNCTION_LINES) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
  const found = [];
  const visit = (node) => {
    if (isFunction(node)) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > maxLines) found.push({ path: file, line: start + 1, name: functionName(node, source), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * The files over `maxFileLines` and the functions over `maxFunctionLines` under `dirs`
 * (paths relative to `base`; src/store/generated is skipped). Paths in the answer are relative to
 * `base`, with `/` separators.
 */
export function codeShape({ dirs = ["src", "adapters"], base = process.cwd(), maxFileLines = MAX_FILE_LINES, maxFunctionLines = MAX_FUNCTION_LINES } = {}) {
  const files = [];
  const functions = [];
  for (const file of dirs.flatMap((d) => sourceFiles(base, d))) {
    const text = fs.readFileSync(path.join(base, file), "utf8");
    const shown = file.split(path.sep).join("/");
    const lines = lineCount(text);
    if (lines > maxFileLines) files.push({ path: shown, lines });
    functions.push(...longFunctions(shown, text, maxFunctionLines));
  }
  return { files, functions };
}

/** One line per finding, as the CLI prints them. */
export function describeShape({ files, functions }) {
  return [
    ...files.map((f) => `${f.path}: ${f.lines} lines (over ${MAX_FILE_LINES})`),
    ...functions.map((f) => `${f.path}:${f.line} ${f.name}: ${f.lines} lines (over ${MAX_FUNCTION_LINES})`),
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dirs = process.argv.slice(2);
  const found = describeShape(codeShape(dirs.length > 0 ? { dirs } : {}));
  for (const line of found) console.log(line);
  if (found.length > 0) {
    console.error(`code-shape: ${found.length} over the limits (files ${MAX_FILE_LINES} lines, functions ${MAX_FUNCTION_LINES})`);
    process.exit(1);
  }
}

// Imports no vitest: the bench makes its SQLite files through this module too.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** The URL of SQLite file `file` in a fresh temp folder `<prefix><random>`; `made`, when given, collects the folder for removal. */
export function tempSqliteUrl(prefix: string, file: string, made?: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made?.push(dir);
  return `file:${path.join(dir, file)}`;
}

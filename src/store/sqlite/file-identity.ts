import fs from "node:fs";

/**
 * The SQLite file's identity (device and inode) as opened. A file deleted
 * or replaced under a running process keeps taking writes into the old,
 * unlinked inode, which the next start never sees: everything acknowledged
 * meanwhile would be lost. `changed()` says how it changed, if it did.
 */
export class FileIdentity {
  readonly #dev: number;
  readonly #ino: number;

  constructor(readonly file: string) {
    const st = fs.statSync(file);
    this.#dev = st.dev;
    this.#ino = st.ino;
  }

  changed(): string | undefined {
    let st: fs.Stats;
    try {
      st = fs.statSync(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return `the SQLite file ${this.file} was deleted while the gateway was running`;
      return `the SQLite file ${this.file} cannot be checked (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
    }
    if (st.dev !== this.#dev || st.ino !== this.#ino) return `the SQLite file ${this.file} was replaced by another file while the gateway was running`;
    return undefined;
  }
}

import fs from "node:fs";
import path from "node:path";

/**
 * A local append-only log of reply chunks the platform has accepted, written
 * synchronously the moment a send returns. It closes most of the window in
 * which a crash could leave a reply sent but not yet marked sent in the
 * database (that mark waits its turn behind other writes): after a restart,
 * chunks found here are not sent again. It survives a killed process (the
 * write is in the kernel before the next line of JavaScript runs), not a
 * power cut. One process, one file: it sits next to the SQLite database.
 */
export class SentLog {
  #fd: number;
  #writes = 0;
  /** Chunks of replies not yet marked sent in the database, kept across compactions. */
  readonly #open = new Map<string, string>();

  private constructor(
    readonly file: string,
    recovered: Map<string, string>,
    private readonly compactEvery: number,
  ) {
    for (const [k, v] of recovered) this.#open.set(k, v);
    this.#fd = this.#rewrite();
  }

  /** Opens the log, recovering what a previous process recorded. */
  static open(file: string, compactEvery = 20_000): SentLog {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    return new SentLog(file, SentLog.read(file), compactEvery);
  }

  static read(file: string): Map<string, string> {
    const out = new Map<string, string>();
    let text = "";
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (err) {
      // No log yet: a first start. Anything else would silently turn off crash dedupe: stop the start instead.
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return out;
      throw new Error(
        `The sent log ${file} could not be read (${(err as NodeJS.ErrnoException).code ?? String(err)}); without it, replies a crash left unmarked could be sent twice. Fix its permissions or move it away (only if no reply is pending), then start again.`,
        { cause: err },
      );
    }
    for (const line of text.split("\n")) {
      const [kind, key, messageId] = line.split("\t");
      if (kind === "sent" && key) out.set(key, messageId ?? "");
      else if (kind === "done" && key) {
        out.delete(key);
        for (const k of [...out.keys()]) if (k.startsWith(`${key}:`)) out.delete(k);
      }
    }
    return out;
  }

  /** The platform message id of a chunk accepted before, if any. */
  sent(deliveryId: string, chunk: number): string | undefined {
    return this.#open.get(`${deliveryId}:${chunk}`);
  }

  /** Records an accepted chunk, synchronously. */
  record(deliveryId: string, chunk: number, messageId: string): void {
    const key = `${deliveryId}:${chunk}`;
    this.#open.set(key, messageId);
    fs.writeSync(this.#fd, `sent\t${key}\t${messageId}\n`);
    this.#tick();
  }

  /**
   * A streamed draft is on the platform for this inbound event. It has no
   * delivery record: if the turn never commits (a crash, a shutdown), the
   * replayed turn's reply edits this message instead of posting another.
   */
  recordDraft(inboundId: string, messageId: string): void {
    this.record(`draft:${inboundId}`, -1, messageId);
  }

  draftOf(inboundId: string): string | undefined {
    return this.#open.get(`draft:${inboundId}:-1`);
  }

  forgetDraft(inboundId: string): void {
    this.done(`draft:${inboundId}`);
  }

  /** The reply is marked sent in the database: its chunks need no memory here any more. */
  done(deliveryId: string): void {
    let had = false;
    for (const k of [...this.#open.keys()]) {
      if (k.startsWith(`${deliveryId}:`)) {
        this.#open.delete(k);
        had = true;
      }
    }
    if (had) {
      fs.writeSync(this.#fd, `done\t${deliveryId}\n`);
      this.#tick();
    }
  }

  #tick(): void {
    if (++this.#writes >= this.compactEvery) {
      this.#writes = 0;
      fs.closeSync(this.#fd);
      this.#fd = this.#rewrite();
    }
  }

  /** Writes only the open chunks to a fresh file and swaps it in atomically. */
  #rewrite(): number {
    const tmp = `${this.file}.tmp`;
    fs.writeFileSync(tmp, [...this.#open].map(([k, v]) => `sent\t${k}\t${v}\n`).join(""));
    fs.renameSync(tmp, this.file);
    return fs.openSync(this.file, "a");
  }

  close(): void {
    fs.closeSync(this.#fd);
  }
}

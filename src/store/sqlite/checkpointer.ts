import { Worker } from "node:worker_threads";

/**
 * The worker's source. It is evaluated (eval: true), so the compiled build
 * needs no second file beside its bundle; the driver comes by absolute path.
 * It checkpoints on request and answers each request, so the main thread
 * never has more than one outstanding.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Sqlite = require(workerData.driver);
const db = new Sqlite(workerData.file, { fileMustExist: true, timeout: workerData.busyTimeoutMs });
parentPort.on("message", (m) => {
  if (m === "stop") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [r] = db.pragma("wal_checkpoint(PASSIVE)");
    parentPort.postMessage({ ok: true, log: r.log, checkpointed: r.checkpointed });
  } catch (e) {
    parentPort.postMessage({ ok: false, message: String((e && e.message) || e), code: e && e.code });
  }
});
`;

export interface CheckpointerOptions {
  /** The SQLite file (it must exist: the checkpointer never creates one). */
  file: string;
  /** The resolved path of the better-sqlite3 module the worker loads. */
  driver: string;
  busyTimeoutMs: number;
  /** A checkpoint is asked for after this many commits. */
  everyCommits: number;
  /** A WAL this long (in pages) after a checkpoint is finished with no commit running, so the writer starts it again from the top. */
  restartAtFrames: number;
  /** Runs `fn` holding the database's mutex: no commit runs meanwhile (the event loop does). */
  exclusive: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Told of a checkpoint that failed, or of the worker failing; the connection's own checkpoints still run. */
  onError: (err: Error) => void;
}

/** At most this many pages are left to the checkpoint that holds the mutex, after at most MAX_PASSES passes without it. */
const FINAL_PAGES = 256;
const MAX_PASSES = 4;

const left = (r: Reply): number => (r.log ?? 0) - (r.checkpointed ?? 0);

interface Reply {
  ok: boolean;
  /** Pages in the WAL, and how many of them are in the database file now. */
  log?: number;
  checkpointed?: number;
  message?: string;
  code?: string;
}

/**
 * Checkpoints the SQLite WAL on a worker thread with its own connection.
 * Left to the writing connection, a checkpoint runs inside the commit that
 * crosses wal_autocheckpoint and holds the event loop while it copies the WAL
 * into the database (about 60 ms for 10,000 pages here): every message
 * arriving meanwhile waits, and that stall set the gateway's p99 (22 ms at
 * 500 msgs/s; 4 ms with no checkpoint at all).
 *
 * A round, every `everyCommits` commits: a PASSIVE checkpoint, which waits for
 * no reader or writer, copies the WAL while commits go on. Under steady
 * writes it never catches up (pages are appended while it copies), and the
 * writer can only start the WAL again from the top once all of it is copied,
 * so the file would grow to the backstop. So when the WAL is past
 * `restartAtFrames`, the round ends with a second checkpoint holding the
 * database's mutex: only the pages written since the first are left, no
 * commit runs meanwhile (they queue; the event loop is free), and the next
 * commit restarts the WAL. The connection's wal_autocheckpoint stays as the
 * backstop for a worker that fails.
 */
export class Checkpointer {
  #worker: Worker | undefined;
  #commits = 0;
  #round: Promise<void> | undefined;
  #answer: { resolve: (r: Reply) => void; reject: (e: Error) => void } | undefined;
  #failed = false;
  #stopping: Promise<void> | undefined;
  /** Checkpoints that completed, and rounds that ended with the WAL wholly copied (tests and the bench read them). */
  readonly stats = { checkpoints: 0, restarts: 0 };

  constructor(private readonly o: CheckpointerOptions) {}

  /** Called after every commit of the writing connection. */
  committed(): void {
    if (this.#failed || this.#stopping || this.#round || ++this.#commits < this.o.everyCommits) return;
    this.#commits = 0;
    this.#round = this.#run().finally(() => {
      this.#round = undefined;
    });
  }

  async #run(): Promise<void> {
    try {
      let bulk = await this.#ask();
      // Pages written while one pass copied are copied by the next, until few are left for the
      // pass that holds the mutex (its commits wait for it).
      for (let i = 0; i < MAX_PASSES && left(bulk) > FINAL_PAGES && !this.#stopping; i++) bulk = await this.#ask();
      if ((bulk.log ?? 0) < this.o.restartAtFrames || this.#stopping) return;
      const rest = await this.o.exclusive(() => this.#ask());
      if (rest.log !== undefined && rest.log === rest.checkpointed) this.stats.restarts++;
    } catch (e) {
      if (!this.#failed && !this.#stopping) this.o.onError(e as Error);
    }
  }

  #ask(): Promise<Reply> {
    if (this.#failed) return Promise.reject(new Error("the SQLite checkpoint worker is not running"));
    this.#worker ??= this.#start();
    const w = this.#worker;
    return new Promise<Reply>((resolve, reject) => {
      this.#answer = { resolve, reject };
      w.postMessage("checkpoint");
    });
  }

  #start(): Worker {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { file: this.o.file, driver: this.o.driver, busyTimeoutMs: this.o.busyTimeoutMs } });
    // It never keeps the process alive; close() stops it first, so the writing connection closes last.
    w.unref();
    w.on("message", (m: Reply) => {
      const a = this.#answer;
      this.#answer = undefined;
      if (m.ok) {
        this.stats.checkpoints++;
        a?.resolve(m);
      } else a?.reject(Object.assign(new Error(`SQLite WAL checkpoint failed: ${m.message}`), { code: m.code }));
    });
    w.on("error", (err) => this.#fail(err));
    w.on("exit", (code) => {
      if (!this.#stopping) this.#fail(new Error(`the SQLite checkpoint worker exited (code ${code})`));
    });
    return w;
  }

  #fail(err: Error): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#answer?.reject(err);
    this.#answer = undefined;
    this.o.onError(new Error(`${err.message}; checkpoints run on the writing connection from now on`, { cause: err }));
  }

  /** Lets a round in progress end, then stops the worker, which closes its connection; resolves once it has exited. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await this.#round;
      const w = this.#worker;
      if (!w || this.#failed) return;
      const exited = new Promise<void>((r) => w.once("exit", () => r()));
      w.postMessage("stop");
      const timer = setTimeout(() => void w.terminate(), 10_000);
      await exited;
      clearTimeout(timer);
    })();
    return this.#stopping;
  }
}

import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { AgentError } from "./types.js";

/**
 * The tokenizer (gpt-tokenizer's o200k_base) runs in a worker thread of its
 * own. Loading its encoding evaluates 2.8 MB of tables in one synchronous
 * step (about 170 ms of CPU, measured on the bench machine): on the event
 * loop that held every chat's messages behind the first model turn whose
 * provider sent no usage (issue 31, the paced bench's 124 ms stall). In the
 * worker it loads and counts beside the loop; a count costs the loop one
 * message each way. The worker starts on the first count only, as the
 * tokenizer was loaded before, so a provider that reports usage never pays
 * its memory.
 */

/** What the worker runs (CommonJS, evaluated as given: the bundle has no file of its own for it). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { countTokens } = require(workerData.path);
// No special token in a user's text may make counting throw: each counts as the text it is.
const plain = { disallowedSpecial: new Set() };
parentPort.postMessage({ loaded: true });
parentPort.on("message", ({ id, texts }) => {
  try {
    parentPort.postMessage({ id, counts: texts.map((t) => countTokens(t, plain)) });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
});
`;

interface Answer {
  loaded?: true;
  id: number;
  counts?: number[];
  error?: string;
}

let worker: Worker | undefined;
/** Whether the worker has the encoding loaded: until then a count would wait for the load. */
let loaded = false;
/** Those waiting for the load (whenTokenCounterLoaded). */
const onLoaded: Array<() => void> = [];
let nextId = 0;
/** Exchanges asked of the worker so far: each wakes it and waits for its answer (tests check a call makes one). */
let exchanges = 0;
const pending = new Map<number, { resolve(counts: number[]): void; reject(err: unknown): void }>();

function failAll(err: unknown): void {
  for (const p of pending.values()) p.reject(err);
  pending.clear();
}

function started(): Worker {
  if (worker) return worker;
  // Resolved here, from this module's place (the bundle's, when built): the install's copy.
  const path = createRequire(import.meta.url).resolve("gpt-tokenizer/encoding/o200k_base");
  const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { path } });
  w.on("message", (a: Answer) => {
    if (a.loaded) {
      if (worker !== w) return;
      loaded = true;
      for (const f of onLoaded.splice(0)) f();
      return;
    }
    const p = pending.get(a.id);
    if (!p) return;
    pending.delete(a.id);
    if (a.counts) p.resolve(a.counts);
    else p.reject(new AgentError("Config", `The token counter failed: ${a.error}`));
  });
  // A worker that dies (its module missing, out of memory) fails what it was asked, and the next count starts a new one.
  const gone = (cause: unknown) => {
    if (worker === w) {
      worker = undefined;
      loaded = false;
    }
    failAll(new AgentError("Config", "The token counter (gpt-tokenizer, in a worker thread) stopped; check that the install has gpt-tokenizer.", { cause }));
  };
  w.on("error", gone);
  w.on("exit", (code) => gone(new Error(`worker exited with code ${code}`)));
  // An idle counter never holds the process open; a count waiting on it does.
  w.unref();
  worker = w;
  return w;
}

/** Whether a count would be answered now, not after the tokenizer loads (about 200 ms). */
export function tokenCounterLoaded(): boolean {
  return loaded;
}

/** Starts the worker loading the tokenizer, if it is not already (no wait). */
export function warmTokenCounter(): void {
  started();
}

/** Resolves once the tokenizer has loaded in its worker (started if it is not). */
export function whenTokenCounterLoaded(): Promise<void> {
  started();
  if (loaded) return Promise.resolve();
  return new Promise((resolve) => onLoaded.push(resolve));
}

/** The o200k_base token counts of `texts`, counted in the tokenizer's worker. */
export function countTokens(texts: readonly string[]): Promise<number[]> {
  const w = started();
  const id = nextId++;
  exchanges++;
  return new Promise<number[]>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    if (pending.size === 1) w.ref();
    w.postMessage({ id, texts });
  }).finally(() => {
    if (pending.size === 0 && worker === w) w.unref();
  });
}

/** How many counts have been asked of the worker in this process. */
export function tokenCounterExchanges(): number {
  return exchanges;
}

/** Stops the worker (tests; a process that ends needs nothing: it is unref'd when idle). */
export async function stopTokenCounter(): Promise<void> {
  const w = worker;
  worker = undefined;
  loaded = false;
  if (w) await w.terminate();
}

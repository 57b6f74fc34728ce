/**
 * The transport of a stdio server the gateway starts. As the SDK's
 * StdioClientTransport (its ReadBuffer, so a message line is bounded at 10 MB
 * and a longer one closes the transport; stdin/stdout JSON lines; stderr
 * piped, never mixed into the gateway's output), except that on POSIX the
 * server runs in a process group of its own and ending it ends the group: the
 * processes a server starts (a language server, a browser, a shell) go with
 * it, on a stop, a restart, its own crash, or the gateway's exit.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

export interface StdioServerParams {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

/** Where the server's stderr goes: chunks as they come, then end() once the server is gone. */
export interface StderrSink {
  write(chunk: Buffer): void;
  end(): void;
}

/** How long a server gets to exit once its stdin is closed, then its group after SIGTERM before SIGKILL (the SDK's 2 s). */
export const STOP_GRACE_MS = 2_000;
const POSIX = process.platform !== "win32";

/**
 * The groups started and not yet SIGKILLed. If the gateway exits while some run (a crash, process.exit without a stop),
 * its 'exit' hook kills them there and then: it can only act synchronously, so it does not wait for a grace.
 */
const liveGroups = new Set<number>();
const killLiveGroups = (): void => {
  for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
  liveGroups.clear();
};

function track(pgid: number): void {
  if (liveGroups.size === 0) process.on("exit", killLiveGroups);
  liveGroups.add(pgid);
}

function untrack(pgid: number): void {
  if (!liveGroups.delete(pgid)) return;
  if (liveGroups.size === 0) process.off("exit", killLiveGroups);
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already empty.
  }
}

export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #readBuffer = new ReadBuffer();
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #closed: Promise<void> = Promise.resolve();
  #killTimer: NodeJS.Timeout | undefined;
  #terminating = false;

  constructor(
    private readonly params: StdioServerParams,
    private readonly stderr: StderrSink,
    private readonly graceMs = STOP_GRACE_MS,
  ) {}

  /** The server's pid once started (its group's id too, on POSIX). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): Promise<void> {
    if (this.#child) throw new Error("this stdio transport is already started");
    const { command, args, env, cwd } = this.params;
    const child = spawn(command, args, { env, ...(cwd && { cwd }), stdio: ["pipe", "pipe", "pipe"], shell: false, detached: POSIX, windowsHide: true });
    this.#child = child;
    this.#exited = new Promise((r) => child.once("exit", () => r()));
    this.#closed = new Promise((r) => child.once("close", () => r()));
    // The leader gone (stopped or crashed), what it started follows: SIGTERM to its group, SIGKILL after the grace.
    child.once("exit", () => this.#terminate());
    child.once("close", () => {
      this.#child = undefined;
      this.stderr.end();
      this.onclose?.();
    });
    child.stdin!.on("error", (e) => this.onerror?.(e));
    child.stdout!.on("error", (e) => this.onerror?.(e));
    child.stdout!.on("data", (chunk: Buffer) => this.#receive(chunk));
    child.stderr!.on("data", (chunk: Buffer) => this.stderr.write(chunk));
    return new Promise((resolve, reject) => {
      let spawned = false;
      child.on("error", (e) => {
        // Not started (no such command, no permission): nothing to wait for at close.
        if (!spawned && this.#child === child) this.#child = undefined;
        reject(e);
        this.onerror?.(e);
      });
      child.once("spawn", () => {
        spawned = true;
        if (POSIX && child.pid !== undefined) track(child.pid);
        resolve();
      });
    });
  }

  /** As the SDK: a line past the ReadBuffer's bound is an error and closes the transport; a bad line is an error only. */
  #receive(chunk: Buffer): void {
    try {
      this.#readBuffer.append(chunk);
    } catch (e) {
      this.onerror?.(e as Error);
      void this.close().catch(() => undefined);
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#readBuffer.readMessage();
      } catch (e) {
        this.onerror?.(e as Error);
        continue;
      }
      if (message === null) break;
      this.onmessage?.(message);
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.#child?.stdin;
      if (!stdin || stdin.destroyed) return reject(new Error("Not connected"));
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /**
   * Closes stdin and gives the server the grace to exit; then SIGTERM to its group, and SIGKILL after another grace.
   * Resolves once the server has exited and its pipes are closed.
   */
  async close(): Promise<void> {
    const child = this.#child;
    if (child) {
      try {
        child.stdin?.end();
      } catch {
        // already gone
      }
      await within(this.#exited, this.graceMs);
      this.#terminate();
      await within(this.#closed, this.graceMs * 2);
    }
    this.#readBuffer.clear();
  }

  /** SIGTERM to the whole group now, SIGKILL after the grace (then the pipes are let go, so 'close' comes even if a stray holds them). */
  #terminate(): void {
    const child = this.#child;
    if (this.#terminating || !child) return;
    this.#terminating = true;
    this.#signal(child, "SIGTERM");
    this.#killTimer = setTimeout(() => {
      this.#signal(child, "SIGKILL");
      if (child.pid !== undefined) untrack(child.pid);
      for (const s of [child.stdin, child.stdout, child.stderr]) s?.destroy();
    }, this.graceMs);
    this.#killTimer.unref();
  }

  #signal(child: ChildProcess, signal: NodeJS.Signals): void {
    if (POSIX && child.pid !== undefined) signalGroup(child.pid, signal);
    else if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  }
}

function within(p: Promise<void>, ms: number): Promise<void> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<void>((r) => (t = setTimeout(r, ms)))]).finally(() => clearTimeout(t));
}

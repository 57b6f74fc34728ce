import { SwitchboardError } from "../errors.js";
/**
 * What every CLI command prints. With --json: exactly one JSON document on
 * stdout: the command's result as it always was (scripts parse it), or
 * `{"ok":false,"error":{"code","message"}}` whatever went wrong (usage
 * errors included). Without: lines for people,
 * results on stdout and errors on stderr.
 */
export interface CliIO {
  out(line: string): void;
  err(line: string): void;
}

export const stdio: CliIO = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) };

let quietOnClosedPipe = false;

/**
 * `switchboard sessions list | head -1`: once the reader has gone, the next write fails with
 * EPIPE. Nobody is left to read the rest, so the command ends there, quietly and with 0, as
 * Unix tools do; any other write error still surfaces. Not for `serve`, whose stop must drain.
 */
export function exitQuietlyWhenTheReaderLeaves(): void {
  if (quietOnClosedPipe) return;
  quietOnClosedPipe = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE") process.exit(EXIT.ok);
      throw e;
    });
  }
}

/** Exit codes: 0 ok, 1 the command failed, 2 it was called wrongly. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** A failure with a stable code, shown as it is (no stack): the message says what to do. */
export class CliError extends SwitchboardError {
  override readonly name = "CliError";
  constructor(
    code: string,
    message: string,
    readonly exit: number = EXIT.failed,
  ) {
    super(code, message);
  }
}

export const usageError = (message: string): CliError => new CliError("Usage", message, EXIT.usage);

export class Output {
  constructor(
    private readonly io: CliIO,
    readonly json: boolean,
  ) {}

  /** A successful result: `data` for --json, `human` lines otherwise. */
  ok(data: unknown, human: string[]): number {
    if (this.json) this.io.out(JSON.stringify(data, null, 2));
    else for (const l of human) this.io.out(l);
    return EXIT.ok;
  }

  /** A result that is itself a failure (doctor's checklist): printed like ok, exit code 1. */
  report(data: unknown, human: string[], passed: boolean): number {
    if (this.json) this.io.out(JSON.stringify({ ok: passed, ...(data as object) }, null, 2));
    else for (const l of human) this.io.out(l);
    return passed ? EXIT.ok : EXIT.failed;
  }

  fail(code: string, message: string, exit: number = EXIT.failed, hint?: string): number {
    if (this.json) this.io.out(JSON.stringify({ ok: false, error: { code, message } }));
    else this.io.err(`${code === "Usage" ? "usage error" : code}: ${message}${hint ? `\n\n${hint}` : ""}`);
    return exit;
  }
}

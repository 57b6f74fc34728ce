/**
 * The base of every error Switchboard raises on purpose. `code` is stable:
 * operators, scripts and tests match on it, so a code is never renamed.
 * `message` says what went wrong and how to fix it, and never holds a secret.
 *
 * Each layer extends it with its own family and codes: SessionError
 * (src/session/errors.ts), StoreError (src/store/errors.ts), AgentError
 * (src/agent/types.ts), AdapterError and AdapterSetupError
 * (src/gateway/contract.ts), ConfigError (src/config.ts), CliError
 * (src/cli/output.ts), and the runtime's control-flow errors (TurnAbandoned,
 * Unanswered).
 */
export class SwitchboardError<C extends string = string> extends Error {
  override readonly name: string = "SwitchboardError";
  constructor(
    readonly code: C,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isSwitchboardError(e: unknown, code?: string): e is SwitchboardError {
  return e instanceof SwitchboardError && (code === undefined || e.code === code);
}

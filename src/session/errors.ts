import { SwitchboardError } from "../errors.js";

/** Stable error codes of the session domain. Scripts and adapters match on these. */
export const ERROR_CODES = [
  "NotFound",
  "Forbidden",
  "Archived",
  "WrongKind",
  "StaleRotation",
  "RotationOutcomeUnknown",
  "AlreadyExists",
  "Invalid",
  "Unavailable",
  "Closed",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * A typed domain error. `message` says what went wrong and how to fix it;
 * `code` is stable; `details` carries ids for logs (never secrets).
 */
export class SessionError extends SwitchboardError<ErrorCode> {
  override readonly name = "SessionError";
  constructor(
    code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

export function isSessionError(e: unknown, code?: ErrorCode): e is SessionError {
  return e instanceof SessionError && (code === undefined || e.code === code);
}

export const errors = {
  notFound: (what: string, details: Record<string, unknown> = {}) =>
    new SessionError("NotFound", `${what} was not found. Check the id, or create it first.`, details),
  forbidden: (what: string, details: Record<string, unknown> = {}) =>
    new SessionError("Forbidden", `${what} belongs to another user or conversation; it can only be used from the conversation that owns it.`, details),
  archived: (id: string) =>
    new SessionError("Archived", `Session ${id} is archived and read-only. Resume it with /resume, or start a new one with /new.`, { sessionId: id }),
  wrongKind: (id: string, actual: string, wanted: string) =>
    new SessionError("WrongKind", `Session ${id} is a "${actual}" session, but a "${wanted}" session was required.`, { sessionId: id, actual, wanted }),
  stale: (expected: string, details: Record<string, unknown> = {}) =>
    new SessionError(
      "StaleRotation",
      `The conversation no longer points at session ${expected}: a fresh session was already started. Re-read the binding and retry if needed.`,
      { expectedSessionId: expected, ...details },
    ),
  unknownOutcome: (expected: string | undefined, cause: unknown) =>
    new SessionError(
      "RotationOutcomeUnknown",
      `The rotation's commit was not acknowledged, so it may or may not have happened. Call verifyRotation to learn which.`,
      { expectedSessionId: expected },
      { cause },
    ),
  /** The one answer for a session this conversation cannot use: missing and another chat's look the same (no existence oracle). */
  notInChat: (id: string) => new SessionError("NotFound", `Session ${id} was not found in this chat. See /sessions for this chat's sessions.`, {}),
  alreadyExists: (what: string, details: Record<string, unknown> = {}) =>
    new SessionError("AlreadyExists", `${what} already exists; use the existing one or choose another id.`, details),
  closed: (what: string) => new SessionError("Closed", `${what} is closed and takes no more events; open the conversation's current session instead.`),
  invalid: (message: string, details: Record<string, unknown> = {}) => new SessionError("Invalid", message, details),
};

import { sameSecret } from "../operator-auth.js";
import { SCOPES, type ApiToken, type Scope } from "../../../config/api-tokens.js";

/** The callers API_TOKENS (parsed in src/config/api-tokens.ts) and OPERATOR_TOKEN name, as the API authenticates them. */

/** Who made an API request: a token's name and its scopes (never the token). */
export interface ApiPrincipal {
  name: string;
  scopes: ReadonlySet<Scope>;
}

export const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES);

/**
 * Finds the caller of a bearer token. Every configured token is compared, in
 * constant time each, so neither the answer's time nor its path tells which
 * entry (if any) came close.
 */
export class ApiTokens {
  readonly #tokens: ApiToken[];
  readonly #operator: string | undefined;

  constructor(tokens: ApiToken[], operatorToken?: string) {
    this.#tokens = tokens;
    this.#operator = operatorToken;
  }

  /** Whether any token is configured: then every API request must carry one. */
  get required(): boolean {
    return this.#tokens.length > 0 || this.#operator !== undefined;
  }

  /** The caller the Authorization header names, or undefined. */
  principal(authorization: string | undefined): ApiPrincipal | undefined {
    const m = authorization ? /^Bearer\s+(\S{1,512})\s*$/i.exec(authorization) : null;
    if (!m) return undefined;
    const given = m[1]!;
    let found: ApiPrincipal | undefined;
    if (this.#operator !== undefined && sameSecret(given, this.#operator)) found = { name: "operator", scopes: ALL_SCOPES };
    for (const t of this.#tokens) if (sameSecret(given, t.token) && !found) found = { name: t.name, scopes: t.scopes };
    return found;
  }
}

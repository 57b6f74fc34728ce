/**
 * API_TOKENS: the HTTP API's callers and what each may do.
 *
 *   API_TOKENS=ci:send+read:<token>,cron:schedule+read:<token>
 *
 * Entries are separated by commas (or new lines); each is
 * `<name>:<scopes>:<token>`. The name (1-32 of a-z 0-9 _ -) is what logs and
 * records show, never the token. Scopes are joined by `+`: `send`
 * (POST /api/v1/messages), `schedule` (/api/v1/schedules), `read`
 * (GET /api/v1/deliveries/:id and listings), `admin` (every caller's jobs
 * and deliveries, not only its own), or `*` for all. A token is 32 to 256
 * characters of A-Z a-z 0-9 _ - . ~ (`openssl rand -hex 32`).
 * OPERATOR_TOKEN is a caller named "operator" with every scope.
 */

export const SCOPES = ["send", "schedule", "read", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

export interface ApiToken {
  name: string;
  scopes: ReadonlySet<Scope>;
  token: string;
}

const NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const TOKEN = /^[A-Za-z0-9_.~-]{32,256}$/;

export class ApiTokensError extends Error {}

/** Parses API_TOKENS; throws ApiTokensError with a message that never contains a token. */
export function parseApiTokens(value: string | undefined): ApiToken[] {
  if (!value?.trim()) return [];
  const out: ApiToken[] = [];
  const entries = value
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const where = `entry ${i + 1}`;
    const parts = entry.split(":");
    if (parts.length !== 3) throw new ApiTokensError(`${where} must be <name>:<scopes>:<token>, e.g. ci:send+read:$(openssl rand -hex 32)`);
    const [name, scopeText, token] = parts as [string, string, string];
    if (!NAME.test(name)) throw new ApiTokensError(`${where} has a bad name: use 1-32 characters of a-z, 0-9, _ and -, starting with a letter or digit`);
    if (name === "operator" || name === "local")
      throw new ApiTokensError(`${where}: the name "${name}" is reserved (OPERATOR_TOKEN and the open loopback start use it)`);
    const scopes = new Set<Scope>();
    for (const s of scopeText.split("+")) {
      if (s === "*") for (const x of SCOPES) scopes.add(x);
      else if ((SCOPES as readonly string[]).includes(s)) scopes.add(s as Scope);
      else throw new ApiTokensError(`${where} (${name}) has an unknown scope "${s.slice(0, 20)}": use ${SCOPES.join(", ")} or *, joined by +`);
    }
    if (!TOKEN.test(token))
      throw new ApiTokensError(`${where} (${name}) needs a token of 32-256 characters of A-Z, a-z, 0-9, _ . ~ -: make one with openssl rand -hex 32`);
    if (out.some((t) => t.name === name)) throw new ApiTokensError(`${where}: the name "${name}" is used twice`);
    if (out.some((t) => t.token === token)) throw new ApiTokensError(`${where} (${name}) repeats another entry's token: give each caller its own`);
    out.push({ name, scopes, token });
  }
  return out;
}

/**
 * The install flow's `state`, for @slack/oauth's InstallProvider: signed
 * with SLACK_STATE_SECRET (HMAC-SHA256), good for 10 minutes, and used once,
 * by deleting its record in the database (SlackOAuthStates), so a replay is
 * refused even by another process on the same database. InstallProvider
 * itself binds it to the browser with its state cookie.
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { InvalidStateError, type InstallURLOptions, type StateStore } from "@slack/oauth";
import { registerSecret } from "../../src/log.js";
import type { SlackOAuthStates } from "../types.js";

/** How long an install link's state is good for (Slack's own default, and the issue's bound). */
export const STATE_LIFETIME_SECONDS = 600;

export class SingleUseStateStore implements StateStore {
  constructor(
    private readonly secret: string,
    private readonly states: SlackOAuthStates,
    private readonly lifetimeSeconds = STATE_LIFETIME_SECONDS,
  ) {
    registerSecret(secret);
  }

  async generateStateParam(installOptions: InstallURLOptions, now: Date): Promise<string> {
    const body = Buffer.from(JSON.stringify({ n: randomUUID(), t: now.getTime(), o: installOptions })).toString("base64url");
    const state = `${body}.${this.sign(body)}`;
    // Each new state sweeps the expired ones, so install links opened and abandoned (by anyone, when no install
    // token gates them) leave at most ten minutes' worth of rows.
    await this.states.prune(now);
    await this.states.issue(digest(state), new Date(now.getTime() + this.lifetimeSeconds * 1000));
    return state;
  }

  async verifyStateParam(now: Date, state: string): Promise<InstallURLOptions> {
    const [body, mac, extra] = state.split(".");
    if (!body || !mac || extra !== undefined || !sameText(mac, this.sign(body)))
      throw new InvalidStateError("The state parameter is not one this gateway signed.");
    let decoded: { t?: unknown; o?: unknown };
    try {
      decoded = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
    } catch {
      throw new InvalidStateError("The state parameter is not one this gateway signed.");
    }
    if (typeof decoded.t !== "number" || now.getTime() - decoded.t >= this.lifetimeSeconds * 1000)
      throw new InvalidStateError(`The state parameter has expired (an install link is good for ${this.lifetimeSeconds / 60} minutes).`);
    // The delete is the use: of two callbacks with one state, on any process, only one finds the row.
    if (!(await this.states.consume(digest(state), now))) throw new InvalidStateError("The state parameter was already used.");
    return decoded.o as InstallURLOptions;
  }

  private sign(body: string): string {
    return createHmac("sha256", this.secret).update(body).digest("base64url");
  }
}

/** The state's record id: a digest, so the table holds nothing a caller could present. */
function digest(state: string): string {
  return createHash("sha256").update(state).digest("hex");
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Slack token rotation: an installation whose oauth.v2.access answer carried
 * `expires_in` and `refresh_token` has a bot token that lives 12 hours. Its
 * refresh (oauth.v2.access, grant_type=refresh_token) spends the refresh
 * token and answers the next pair, so with several gateway processes on one
 * database exactly one may refresh: it holds a lease in the database
 * (`slack-token-refresh:<enterpriseId>:<teamId>`), re-reads the row under
 * it, and saves with a compare-and-set on the refresh token it used. The
 * others wait for the new row. A failure keeps the old row, is logged and
 * counted (problems(), for doctor and /healthz), and retried with backoff;
 * a token still valid keeps being used meanwhile.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { webApi } from "@slack/bolt";
import { type Logger, redactSecrets, registerSecret } from "../../src/log.js";
import { AdapterError, type SlackInstallationKey, type SlackInstallationRecord, type SlackInstallations } from "../types.js";
import { boltLogger } from "./bolt-logger.js";

/** The database lease the refresh runs under (src/store/leases.ts LeaseStore satisfies it). */
export interface SlackRefreshLocks {
  acquire(key: string, owner: string, ttlMs: number): Promise<boolean>;
  release(key: string, owner: string): Promise<void>;
}

/** What a refresh writes (SlackInstallationStore.rotate): only where the row still holds the refresh token used. */
export interface SlackBotTokenRotation {
  botToken: string;
  botRefreshToken: string;
  botExpiresAt: Date;
}

/** The installations as the refresher reaches them: the port's reads and the store's `rotate`. */
export type SlackRefreshableInstallations = Pick<SlackInstallations, "find" | "list"> & {
  rotate(key: SlackInstallationKey, usedRefreshToken: string, next: SlackBotTokenRotation): Promise<boolean>;
};

export interface SlackTokenRefresherOptions {
  installations: SlackRefreshableInstallations;
  locks: SlackRefreshLocks;
  clientId: string;
  clientSecret: string;
  /** Web API base with a trailing slash (tests: the fake's apiUrl). */
  apiUrl?: string;
  log: Logger;
  now?: () => number;
  /** Refresh when expiresAt - now <= marginMs. Default 5 minutes (Slack's tokens live 12 hours). */
  marginMs?: number;
  /** The background sweep's period. Default 60 s. */
  sweepEveryMs?: number;
  /** This process's lock owner id (default random). */
  owner?: string;
  /** Each refresh's outcome, by `<enterpriseId>:<teamId>` (for metrics). */
  onRefresh?(outcome: "ok" | "failed", teamKey: string): void;
}

export interface SlackRefreshProblem {
  enterpriseId: string;
  teamId: string;
  failures: number;
  lastError: string;
  nextAttemptAt: Date;
}

/** The lease outlives a refresh: the Slack call times out well before it. */
const LOCK_TTL_MS = 30_000;
const SLACK_TIMEOUT_MS = 10_000;
const BACKOFF_FIRST_MS = 1_000;
const BACKOFF_CAP_MS = 5 * 60_000;
/** A waiter's re-reads while another process holds the lease: 50 ms, doubling to 1 s, until the lease's TTL is up. */
const WAIT_FIRST_MS = 50;
const WAIT_CAP_MS = 1_000;

type Row = SlackInstallationRecord;

export class SlackTokenRefresher {
  private readonly client: webApi.WebClient;
  private readonly owner: string;
  private readonly now: () => number;
  private readonly marginMs: number;
  private readonly failures = new Map<string, SlackRefreshProblem>();
  private readonly inFlight = new Map<string, Promise<Row | undefined>>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(private readonly o: SlackTokenRefresherOptions) {
    registerSecret(o.clientSecret);
    this.client = new webApi.WebClient(undefined, {
      ...(o.apiUrl !== undefined && { slackApiUrl: o.apiUrl }),
      retryConfig: { retries: 0 },
      timeout: SLACK_TIMEOUT_MS,
      logger: boltLogger(o.log),
    });
    this.owner = o.owner ?? `slack-refresh-${randomUUID()}`;
    this.now = o.now ?? Date.now;
    this.marginMs = o.marginMs ?? 5 * 60_000;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.kick(), this.o.sweepEveryMs ?? 60_000);
    this.timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /** The installation with a bot token good for more than the margin, refreshing it first when due (under the lock). Undefined when not installed. */
  async current(key: SlackInstallationKey): Promise<Row | undefined> {
    const row = await this.read(key);
    if (!row || !this.due(row)) return row;
    const k = teamKey(key);
    let p = this.inFlight.get(k);
    if (!p) {
      p = this.refresh(key, row).finally(() => this.inFlight.delete(k));
      this.inFlight.set(k, p);
    }
    return p;
  }

  /** Refreshes every installation that is due (what the timer runs). */
  async sweep(): Promise<void> {
    for (const r of await this.o.installations.list()) {
      if (!r.botExpiresAt || r.botExpiresAt.getTime() - this.now() > this.marginMs) continue;
      const key = { enterpriseId: r.enterpriseId, teamId: r.teamId };
      const problem = this.failures.get(teamKey(key));
      if (problem && problem.nextAttemptAt.getTime() > this.now()) continue;
      try {
        await this.current(key);
      } catch (err) {
        // A failed refresh was logged and counted where it failed; anything else (the store) is logged here.
        if (!(err instanceof AdapterError)) this.o.log.warn({ team: describeKey(key), err: errName(err) }, "Slack token sweep could not check an installation");
      }
    }
  }

  /** Per installation whose last refresh failed: key, consecutive failures, last error code, next attempt time. */
  problems(): SlackRefreshProblem[] {
    return [...this.failures.values()].map((p) => ({ ...p }));
  }

  private kick(): void {
    if (this.sweeping) return;
    this.sweeping = this.sweep()
      .catch((err: unknown) => this.o.log.warn({ err: errName(err) }, "Slack token sweep failed; it runs again next period"))
      .finally(() => {
        this.sweeping = undefined;
      });
  }

  /** Reads the row; one no longer due clears a problem (refreshed here or by another process). */
  private async read(key: SlackInstallationKey): Promise<Row | undefined> {
    const row = await this.o.installations.find(key);
    if (row) for (const s of [row.botToken, row.botRefreshToken]) registerSecret(s ?? undefined);
    if (row && !this.due(row)) this.failures.delete(teamKey(key));
    return row;
  }

  private due(row: Row): boolean {
    return row.botExpiresAt !== null && row.botRefreshToken !== null && row.botExpiresAt.getTime() - this.now() <= this.marginMs;
  }

  /** Refreshes under the lease, or waits for the process that holds it. */
  private async refresh(key: SlackInstallationKey, seen: Row): Promise<Row | undefined> {
    const problem = this.failures.get(teamKey(key));
    if (problem && problem.nextAttemptAt.getTime() > this.now()) return this.stale(key, seen, problem);
    const deadline = Date.now() + LOCK_TTL_MS;
    let wait = WAIT_FIRST_MS;
    for (;;) {
      if (await this.o.locks.acquire(lockKey(key), this.owner, LOCK_TTL_MS)) return this.refreshLocked(key);
      await sleep(wait);
      wait = Math.min(wait * 2, WAIT_CAP_MS);
      const row = await this.read(key);
      if (!row || !this.due(row) || row.botRefreshToken !== seen.botRefreshToken) return row;
      // The holder neither finished nor let its lease expire: answer with what is stored.
      if (Date.now() >= deadline) return this.stale(key, row, this.failures.get(teamKey(key)));
    }
  }

  private async refreshLocked(key: SlackInstallationKey): Promise<Row | undefined> {
    try {
      // Another process may have refreshed between our read and the lease: then Slack is not called.
      const row = await this.read(key);
      if (!row?.botRefreshToken || !this.due(row)) return row;
      let answer: webApi.OauthV2AccessResponse;
      try {
        answer = await this.client.oauth.v2.access({
          client_id: this.o.clientId,
          client_secret: this.o.clientSecret,
          grant_type: "refresh_token",
          refresh_token: row.botRefreshToken,
        });
      } catch (err) {
        return await this.failed(key, row, slackErrorCode(err));
      }
      const next = rotationOf(answer, this.now());
      if (!next) return await this.failed(key, row, "malformed_answer");
      let saved: boolean;
      try {
        saved = await this.o.installations.rotate(key, row.botRefreshToken, next);
      } catch {
        // Slack spent the refresh token and the database did not take the next one: reported, and retried.
        return await this.failed(key, row, "store_error");
      }
      if (!saved) {
        this.o.log.info({ team: describeKey(key) }, "Slack installation changed during its token refresh (reinstalled?); the stored row stands");
      } else {
        this.failures.delete(teamKey(key));
        this.o.onRefresh?.("ok", teamKey(key));
        this.o.log.info({ team: describeKey(key), expiresAt: next.botExpiresAt.toISOString() }, "Slack bot token refreshed");
      }
      return await this.read(key);
    } finally {
      await this.o.locks.release(lockKey(key), this.owner).catch((err: unknown) => {
        this.o.log.warn({ team: describeKey(key), err: errName(err) }, "Slack token refresh lease not released; it expires on its own");
      });
    }
  }

  private async failed(key: SlackInstallationKey, used: Row, code: string): Promise<Row | undefined> {
    // A refresh token another writer spent meanwhile is no failure: its row is the answer.
    const row = await this.o.installations.find(key).catch(() => used);
    if (!row || row.botRefreshToken !== used.botRefreshToken) return row;
    const k = teamKey(key);
    const failures = (this.failures.get(k)?.failures ?? 0) + 1;
    const delay = Math.min(BACKOFF_FIRST_MS * 2 ** (failures - 1), BACKOFF_CAP_MS);
    const problem = { ...key, failures, lastError: code, nextAttemptAt: new Date(this.now() + delay) };
    this.failures.set(k, problem);
    this.o.onRefresh?.("failed", k);
    this.o.log.warn(
      { team: describeKey(key), error: code, failures, retryInMs: delay, expired: expired(row, this.now()) },
      `Slack bot token refresh for ${describeKey(key)} failed (${code}); retried in ${delay} ms`,
    );
    return this.stale(key, row, problem);
  }

  /** The stored row while its token is still valid; past its expiry, a Transient error the sender retries. */
  private stale(key: SlackInstallationKey, row: Row, problem: SlackRefreshProblem | undefined): Row {
    if (!expired(row, this.now())) return row;
    const retryAfterMs = problem ? Math.max(0, problem.nextAttemptAt.getTime() - this.now()) : WAIT_CAP_MS;
    const why = problem ? `its refresh failed (${problem.lastError})` : "its refresh is still running in another process";
    throw new AdapterError(
      "slack",
      "Transient",
      `the Slack bot token of ${describeKey(key)} expired and ${why}; the refresh is retried in ${Math.ceil(retryAfterMs / 1000)} s`,
      retryAfterMs,
    );
  }
}

function rotationOf(a: webApi.OauthV2AccessResponse, now: number): SlackBotTokenRotation | undefined {
  if (typeof a.access_token !== "string" || typeof a.refresh_token !== "string" || typeof a.expires_in !== "number") return undefined;
  registerSecret(a.access_token);
  registerSecret(a.refresh_token);
  return { botToken: a.access_token, botRefreshToken: a.refresh_token, botExpiresAt: new Date(now + a.expires_in * 1000) };
}

/** Slack's error code, or the kind of failure: never the request (it carries the client secret and refresh token). */
function slackErrorCode(err: unknown): string {
  const e = (typeof err === "object" && err !== null ? err : {}) as { code?: unknown; data?: { error?: unknown }; statusCode?: unknown };
  if (e.code === "slack_webapi_platform_error" && typeof e.data?.error === "string") return redactSecrets(e.data.error);
  if (e.code === "slack_webapi_rate_limited_error") return "ratelimited";
  if (e.code === "slack_webapi_http_error") return `http_${typeof e.statusCode === "number" ? e.statusCode : "error"}`;
  if (e.code === "slack_webapi_request_error") return "request_error";
  return errName(err);
}

function errName(err: unknown): string {
  return err instanceof Error ? err.name : "unknown_error";
}

function expired(row: Row, now: number): boolean {
  return row.botExpiresAt !== null && row.botExpiresAt.getTime() <= now;
}

function teamKey(k: SlackInstallationKey): string {
  return `${k.enterpriseId}:${k.teamId}`;
}

function lockKey(k: SlackInstallationKey): string {
  return `slack-token-refresh:${teamKey(k)}`;
}

function describeKey(k: SlackInstallationKey): string {
  if (!k.teamId) return `enterprise ${k.enterpriseId} (org-wide)`;
  return k.enterpriseId ? `team ${k.teamId} (enterprise ${k.enterpriseId})` : `team ${k.teamId}`;
}

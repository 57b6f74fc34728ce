import { randomBytes } from "node:crypto";
import { SlackApiError } from "./types.js";

/** A workspace (or org) a test installs the app into: what oauth.v2.access will answer for its code. */
export interface SlackInstallGrant {
  teamId?: string;
  teamName?: string;
  enterpriseId?: string;
  enterpriseName?: string;
  isEnterpriseInstall?: boolean;
  installerUserId?: string;
  botUserId?: string;
  botId?: string;
  scopes?: readonly string[];
  /** Token rotation on: the answer carries expires_in (seconds) and a refresh_token. */
  expiresIn?: number;
}

/** A bot token the fake issued, and whom it belongs to (auth.test answers from it). */
export interface IssuedToken {
  token: string;
  grant: Required<Pick<SlackInstallGrant, "botUserId" | "botId" | "installerUserId">> & SlackInstallGrant;
  refreshToken?: string;
}

/**
 * oauth.v2.access as Slack documents it: the code grant (client_id,
 * client_secret, code, redirect_uri; a code is good once) and the refresh
 * grant (grant_type=refresh_token; the refresh token is good once and the
 * answer carries the next one). Tokens issued here pass the fake's token
 * check, and auth.test answers for their own team.
 */
export class SlackOAuth {
  readonly clientId: string;
  readonly clientSecret: string;
  private readonly codes = new Map<string, { grant: IssuedToken["grant"]; redirectUri?: string }>();
  private readonly refreshTokens = new Map<string, IssuedToken["grant"]>();
  readonly tokens = new Map<string, IssuedToken>();

  constructor(
    private readonly appId: string,
    opts: { clientId?: string; clientSecret?: string } = {},
  ) {
    this.clientId = opts.clientId ?? "1111111111.2222222222";
    this.clientSecret = opts.clientSecret ?? "fake-client-secret-0123456789";
  }

  /** A code Slack would put on the redirect after the user approved the install of `grant`. */
  code(grant: SlackInstallGrant, redirectUri?: string): string {
    const code = `${Date.now()}.${randomBytes(12).toString("hex")}`;
    const key = grant.teamId ?? grant.enterpriseId ?? "T0";
    const full = { botUserId: `U${key}BOT`, botId: `B${key}`, installerUserId: `U${key}ADMIN`, ...grant };
    this.codes.set(code, { grant: full, ...(redirectUri !== undefined && { redirectUri }) });
    return code;
  }

  access(p: Record<string, unknown>): Record<string, unknown> {
    if (p.client_id !== this.clientId) throw new SlackApiError("invalid_client_id");
    if (p.client_secret !== this.clientSecret) throw new SlackApiError("bad_client_secret");
    if (p.grant_type === "refresh_token") return this.refresh(p);
    if (p.grant_type !== undefined && p.grant_type !== "authorization_code") throw new SlackApiError("invalid_grant_type");
    const entry = typeof p.code === "string" ? this.codes.get(p.code) : undefined;
    if (!entry) throw new SlackApiError("invalid_code");
    if (entry.redirectUri !== undefined && p.redirect_uri !== entry.redirectUri) throw new SlackApiError("bad_redirect_uri");
    this.codes.delete(p.code as string);
    const g = entry.grant;
    const issued = this.issue(g);
    return {
      access_token: issued.token,
      token_type: "bot",
      scope: (g.scopes ?? ["chat:write"]).join(","),
      bot_user_id: g.botUserId,
      app_id: this.appId,
      team: g.isEnterpriseInstall ? null : { id: g.teamId, name: g.teamName ?? `Team ${g.teamId}` },
      enterprise: g.enterpriseId ? { id: g.enterpriseId, name: g.enterpriseName ?? `Org ${g.enterpriseId}` } : null,
      is_enterprise_install: g.isEnterpriseInstall === true,
      authed_user: { id: g.installerUserId },
      ...this.rotation(issued),
    };
  }

  private refresh(p: Record<string, unknown>): Record<string, unknown> {
    const grant = typeof p.refresh_token === "string" ? this.refreshTokens.get(p.refresh_token) : undefined;
    if (!grant) throw new SlackApiError("invalid_refresh_token");
    this.refreshTokens.delete(p.refresh_token as string);
    const issued = this.issue(grant);
    return {
      access_token: issued.token,
      token_type: "bot",
      scope: (grant.scopes ?? ["chat:write"]).join(","),
      bot_user_id: grant.botUserId,
      app_id: this.appId,
      team: grant.isEnterpriseInstall ? null : { id: grant.teamId, name: grant.teamName ?? `Team ${grant.teamId}` },
      enterprise: grant.enterpriseId ? { id: grant.enterpriseId, name: grant.enterpriseName ?? `Org ${grant.enterpriseId}` } : null,
      is_enterprise_install: grant.isEnterpriseInstall === true,
      ...this.rotation(issued),
    };
  }

  private issue(grant: IssuedToken["grant"]): IssuedToken {
    const prefix = grant.expiresIn !== undefined ? "xoxe.xoxb-1-" : "xoxb-";
    const issued: IssuedToken = { token: `${prefix}${randomBytes(16).toString("hex")}`, grant };
    if (grant.expiresIn !== undefined) {
      issued.refreshToken = `xoxe-1-${randomBytes(16).toString("hex")}`;
      this.refreshTokens.set(issued.refreshToken, grant);
    }
    this.tokens.set(issued.token, issued);
    return issued;
  }

  private rotation(issued: IssuedToken): Record<string, unknown> {
    return issued.refreshToken ? { expires_in: issued.grant.expiresIn, refresh_token: issued.refreshToken } : {};
  }

  /** auth.test for a token issued here. */
  authTest(t: IssuedToken): Record<string, unknown> {
    const g = t.grant;
    return {
      url: `https://${(g.teamId ?? g.enterpriseId ?? "org").toLowerCase()}.slack.com/`,
      team: g.teamName ?? `Team ${g.teamId}`,
      user: "switchboard-test-bot",
      team_id: g.isEnterpriseInstall ? "" : g.teamId,
      user_id: g.botUserId,
      bot_id: g.botId,
      app_id: this.appId,
      ...(g.enterpriseId && { enterprise_id: g.enterpriseId }),
      is_enterprise_install: g.isEnterpriseInstall === true,
    };
  }
}

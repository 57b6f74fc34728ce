/**
 * The workspaces one Slack app serves, and the credentials of each. Installed
 * by OAuth into many workspaces, every event, interaction, command and send
 * belongs to one installation: found by its team (and enterprise, for
 * Enterprise Grid) through the SlackInstallations port, which hands back that
 * installation's bot token, bot user and installer (the token refresher, which
 * reads every row, registers its tokens with the log redactor). Bolt's `authorize` reads
 * it per event; the sink, the cards and the file downloads per call, so a
 * revoked or uninstalled workspace stops at once in this process.
 */
import { webApi } from "@slack/bolt";
import type { Logger } from "../../src/log.js";
import { AdapterError, type SlackInstallationKey, type SlackInstallationRecord } from "../types.js";
import type { SlackIdentity } from "./normalize.js";

/** Where an event or a send belongs: a workspace, within an Enterprise Grid org when it has one. */
export interface WorkspaceRef {
  teamId?: string | undefined;
  enterpriseId?: string | undefined;
  /** The event came through an org-wide install (Bolt's source.isEnterpriseInstall). */
  isEnterpriseInstall?: boolean | undefined;
}

/** One installation as an event's listener sees it. */
export interface Workspace {
  token: string;
  /** The bot as this workspace knows it; teamId is the event's workspace (under an org-wide install, each workspace of the org). */
  me: SlackIdentity;
  /** The Slack user who installed the app here: this workspace's admin by default. */
  installerUserId?: string;
  enterpriseId?: string;
  isEnterpriseInstall: boolean;
}

export type ResolveInstallation = (key: SlackInstallationKey) => Promise<SlackInstallationRecord | undefined>;

export interface SlackWorkspacesOptions {
  /** The installation of a key, its token fresh (the token refresher), else undefined. */
  resolve: ResolveInstallation;
  clientOptions: ConstructorParameters<typeof webApi.WebClient>[1];
  log: Logger;
}

/** How many Web API clients (one per token) are kept; the oldest is dropped past it. */
const CLIENTS = 1000;

/** The keys an event or a send may be installed under, most specific first: the workspace, then its org. */
export function installationKeys(ref: WorkspaceRef): SlackInstallationKey[] {
  const enterpriseId = ref.enterpriseId ?? "";
  if (ref.isEnterpriseInstall && enterpriseId) return [{ enterpriseId, teamId: "" }];
  const keys: SlackInstallationKey[] = [];
  if (ref.teamId) keys.push({ enterpriseId, teamId: ref.teamId });
  if (enterpriseId) keys.push({ enterpriseId, teamId: "" });
  return keys;
}

function describe(ref: WorkspaceRef): string {
  return [ref.teamId && `workspace ${ref.teamId}`, ref.enterpriseId && `org ${ref.enterpriseId}`].filter(Boolean).join(" in ") || "an unnamed workspace";
}

export class SlackWorkspaces {
  readonly #clients = new Map<string, webApi.WebClient>();

  constructor(private readonly o: SlackWorkspacesOptions) {}

  /** The installation an event or a send belongs to, or undefined when the app is not installed there. */
  async workspace(ref: WorkspaceRef): Promise<Workspace | undefined> {
    for (const key of installationKeys(ref)) {
      const row = await this.o.resolve(key);
      if (!row) continue;
      const me: SlackIdentity = {
        teamId: ref.teamId || row.teamId,
        botUserId: row.botUserId,
        botId: row.botId,
        ...(row.appId ? { appId: row.appId } : {}),
      };
      return {
        token: row.botToken,
        me,
        ...(row.installerUserId ? { installerUserId: row.installerUserId } : {}),
        ...(row.enterpriseId ? { enterpriseId: row.enterpriseId } : {}),
        isEnterpriseInstall: row.isEnterpriseInstall,
      };
    }
    return undefined;
  }

  /** Bolt's `authorize`: the installation's token and bot, or an error naming the workspace (never a token). */
  authorize = async (source: WorkspaceRef): Promise<Record<string, unknown>> => {
    const w = await this.workspace(source);
    if (!w) throw new UnknownWorkspace(source);
    return {
      botToken: w.token,
      botUserId: w.me.botUserId,
      ...(w.me.botId !== undefined && { botId: w.me.botId }),
      teamId: w.me.teamId,
      ...(w.enterpriseId && { enterpriseId: w.enterpriseId }),
      isEnterpriseInstall: w.isEnterpriseInstall,
      ...(w.installerUserId && { installerUserId: w.installerUserId }),
      ...(w.me.appId && { appId: w.me.appId }),
    };
  };

  /** A Web API client with the token of the workspace a send goes to; Rejected when the app is not installed there. */
  async client(ref: WorkspaceRef): Promise<webApi.WebClient> {
    const w = await this.workspace(ref);
    if (!w)
      throw new AdapterError(
        "slack",
        "Rejected",
        `uninstalled: the Slack app is not installed in ${describe(ref)} (it was uninstalled or its tokens revoked); nothing is sent there`,
      );
    return this.clientFor(w.token);
  }

  /** The token of a workspace, for the file downloads; undefined when not installed. */
  async token(ref: WorkspaceRef): Promise<string | undefined> {
    return (await this.workspace(ref))?.token;
  }

  clientFor(token: string): webApi.WebClient {
    let c = this.#clients.get(token);
    if (c) return c;
    c = new webApi.WebClient(token, this.o.clientOptions);
    this.#clients.set(token, c);
    if (this.#clients.size > CLIENTS) this.#clients.delete(this.#clients.keys().next().value!);
    return c;
  }

  /** Forgets the clients of a token that was revoked. */
  forget(token: string): void {
    this.#clients.delete(token);
  }
}

/** An event for a workspace the app is not installed in: acknowledged, logged, never answered. */
export class UnknownWorkspace extends Error {
  override readonly name = "UnknownWorkspace";
  constructor(readonly ref: WorkspaceRef) {
    super(`the Slack app has no installation for ${describe(ref)}: the event is acknowledged and not answered (install the app there from /slack/install)`);
  }
}

/**
 * Slack's file endpoint: a file's url_private(_download) on files.slack.com,
 * fetched with the bot token as a bearer (the app needs the files:read
 * scope). The token goes only to Slack's file host (plus the host of
 * SLACK_API_URL when set: a test fake); a redirect anywhere else is refused
 * by the core, so it never leaves them.
 */
import type { FileLocation, FileOrigin, FileRef, FileSource } from "../types.js";

export const SLACK_FILE_HOSTS = ["files.slack.com"] as const;

export interface SlackFileInfo {
  url_private_download?: string;
  url_private?: string;
  size?: number;
}

/**
 * `tokenOf` gives the bot token of the workspace the file was shared in (its
 * message's reply address): the one token, or that installation's.
 */
export function slackFiles(
  tokenOf: (from: FileOrigin | undefined) => Promise<string | undefined> | string,
  opts: { apiUrl?: string; info?: (fileId: string, from: FileOrigin | undefined) => Promise<SlackFileInfo | undefined> } = {},
): FileSource {
  const hosts: string[] = [...SLACK_FILE_HOSTS];
  if (opts.apiUrl) hosts.push(new URL(opts.apiUrl).host.toLowerCase());
  return {
    async locate(file: FileRef, _signal: AbortSignal, from?: FileOrigin): Promise<FileLocation> {
      const botToken = await tokenOf(from);
      if (!botToken) throw new Error(`slack file ${file.fileId}: the app is no longer installed in the workspace it was shared in`);
      // An event's file object may be partial (file_access: check_file_info): files.info has the URL then.
      const info = file.url ? undefined : await opts.info?.(file.fileId, from);
      const url = file.url ?? info?.url_private_download ?? info?.url_private;
      if (!url) throw new Error(`slack file ${file.fileId} has no url_private (does the app have the files:read scope?)`);
      const size = info?.size ?? file.size;
      return {
        url,
        headers: { authorization: `Bearer ${botToken}` },
        allowedHosts: hosts,
        label: `slack file ${file.fileId}`,
        ...(size !== undefined && { size }),
      };
    },
  };
}

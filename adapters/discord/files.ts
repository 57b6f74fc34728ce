/**
 * Discord's file endpoint: an attachment's `url` on Discord's CDN (signed,
 * no token needed). Only Discord's CDN hosts are fetched from, plus the
 * host of DISCORD_API_URL when it points elsewhere (a proxy, a test fake).
 */
import type { FileLocation, FileRef, FileSource } from "../types.js";

export const DISCORD_CDN_HOSTS = ["cdn.discordapp.com", "media.discordapp.net"] as const;

export function discordFiles(apiUrl?: string): FileSource {
  const hosts: string[] = [...DISCORD_CDN_HOSTS];
  if (apiUrl) hosts.push(new URL(apiUrl).host.toLowerCase());
  return {
    async locate(file: FileRef): Promise<FileLocation> {
      const url = file.url ?? file.fileId;
      // The signed query (ex, is, hm) stays out of the label.
      const path = (() => {
        try {
          return new URL(url).pathname.split("/").pop() ?? "";
        } catch {
          return "";
        }
      })();
      return { url, allowedHosts: hosts, label: `discord attachment ${file.name ?? path}`, ...(file.size !== undefined && { size: file.size }) };
    },
  };
}

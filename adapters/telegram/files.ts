/**
 * Telegram's file endpoint: getFile gives a file_path, and the bytes are at
 * <apiRoot>/file/bot<token>/<file_path>. The URL carries the token, so the
 * label the core logs is the file_path alone.
 */
import type { Api } from "grammy";
import type { FileLocation, FileRef, FileSource } from "../types.js";

export const DEFAULT_API_ROOT = "https://api.telegram.org";

export function telegramFiles(api: Api, token: string, apiRoot = DEFAULT_API_ROOT): FileSource {
  const root = apiRoot.replace(/\/+$/, "");
  const host = new URL(root).host.toLowerCase();
  return {
    async locate(file: FileRef, signal: AbortSignal): Promise<FileLocation> {
      const f = await api.getFile(file.fileId, signal as Parameters<Api["getFile"]>[1]);
      if (!f.file_path) throw new Error("telegram getFile returned no file_path (the file is over the Bot API's 20 MB download limit)");
      return {
        url: `${root}/file/bot${token}/${f.file_path.split("/").map(encodeURIComponent).join("/")}`,
        allowedHosts: [host],
        label: `telegram file ${f.file_path}`,
        ...(f.file_size !== undefined ? { size: f.file_size } : file.size !== undefined ? { size: file.size } : {}),
      };
    },
  };
}

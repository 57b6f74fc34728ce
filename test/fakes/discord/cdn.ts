/**
 * The Discord fake's attachment CDN. Discord serves a message's attachments
 * at cdn.discordapp.com/attachments/<channel>/<attachment>/<filename> with a
 * signed query (ex: expiry, is: issued, hm: signature); a URL whose
 * signature does not match, or that has expired, answers 404 "This content
 * is no longer available." No token is needed or looked at.
 */
import { createHmac } from "node:crypto";
import type http from "node:http";

export interface CdnDownload {
  path: string;
  status: number;
  authorization: string | undefined;
  at: number;
}

export class DiscordCdn {
  readonly files = new Map<string, { data: Buffer; contentType: string }>();
  readonly downloads: CdnDownload[] = [];
  private readonly key = `cdn-${Math.random()}`;

  constructor(private readonly base: () => string) {}

  /** Stores the bytes and returns the signed URL, valid for `ttlSec` (Discord: 24 h). */
  add(channelId: string, attachmentId: string, filename: string, data: Buffer, contentType: string, ttlSec = 86_400): string {
    const path = `/attachments/${channelId}/${attachmentId}/${encodeURIComponent(filename)}`;
    this.files.set(path, { data, contentType });
    const now = Math.floor(Date.now() / 1000);
    const ex = (now + ttlSec).toString(16);
    const is = now.toString(16);
    return `${this.base()}${path}?ex=${ex}&is=${is}&hm=${this.sign(path, ex, is)}&`;
  }

  private sign(path: string, ex: string, is: string): string {
    return createHmac("sha256", this.key).update(`${path}|${ex}|${is}`).digest("hex");
  }

  /** Serves GET /attachments/...; false when the path is not an attachment. */
  serve(req: http.IncomingMessage, res: http.ServerResponse, url: URL): boolean {
    if (!url.pathname.startsWith("/attachments/")) return false;
    const ex = url.searchParams.get("ex") ?? "";
    const is = url.searchParams.get("is") ?? "";
    const f = this.files.get(url.pathname);
    const valid = f && url.searchParams.get("hm") === this.sign(url.pathname, ex, is) && Number.parseInt(ex, 16) * 1000 > Date.now();
    const status = valid ? 200 : 404;
    this.downloads.push({ path: url.pathname, status, authorization: req.headers.authorization, at: Date.now() });
    if (!valid) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("This content is no longer available.");
      return true;
    }
    res.writeHead(200, { "content-type": f.contentType, "content-length": f.data.length });
    res.end(f.data);
    return true;
  }
}

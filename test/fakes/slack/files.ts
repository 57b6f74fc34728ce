/**
 * Files in the Slack fake, as Slack serves them: a file object (as in a
 * message's `files`, and from files.info) whose `url_private` and
 * `url_private_download` live on the file host and need the bot token as
 * `Authorization: Bearer` and the `files:read` scope. Without them Slack
 * does not answer 401: it redirects to the workspace's sign-in page, on
 * another host, which a careful client refuses to follow.
 */
import { randomBytes } from "node:crypto";
import type http from "node:http";

export interface SlackFileInput {
  name: string;
  mimetype: string;
  data: Buffer;
  /** Slack's `filetype` (jpg, png, webm, m4a...); default from the name's extension. */
  filetype?: string;
  /** An audio clip recorded in Slack (subtype slack_audio). */
  audioClip?: boolean;
}

export interface StoredSlackFile {
  object: Record<string, unknown>;
  data: Buffer;
  path: string;
}

export interface FileDownload {
  path: string;
  authorization: string | undefined;
  status: number;
  at: number;
}

export class SlackFiles {
  readonly files = new Map<string, StoredSlackFile>();
  readonly downloads: FileDownload[] = [];

  constructor(
    private readonly teamId: string,
    private readonly teamDomain: string,
    private readonly base: () => string,
    private readonly user: () => string,
  ) {}

  add(o: SlackFileInput): Record<string, unknown> {
    const id = `F${randomBytes(5).toString("hex").toUpperCase()}`;
    const path = `/files-pri/${this.teamId}-${id}/${encodeURIComponent(o.name)}`;
    const object: Record<string, unknown> = {
      id,
      created: Math.floor(Date.now() / 1000),
      timestamp: Math.floor(Date.now() / 1000),
      name: o.name,
      title: o.name,
      mimetype: o.mimetype,
      filetype: o.filetype ?? o.name.split(".").pop() ?? "binary",
      pretty_type: o.mimetype,
      user: this.user(),
      mode: "hosted",
      is_external: false,
      is_public: false,
      size: o.data.length,
      url_private: `${this.base()}${path}`,
      url_private_download: `${this.base()}/files-pri/${this.teamId}-${id}/download/${encodeURIComponent(o.name)}`,
      permalink: `https://${this.teamDomain}.slack.com/files/${this.user()}/${id}/${encodeURIComponent(o.name)}`,
      ...(o.audioClip && { subtype: "slack_audio", media_display_type: "audio" }),
    };
    this.files.set(id, { object, data: o.data, path });
    return object;
  }

  /** Serves GET /files-pri/<team>-<id>/[download/]<name>; false when the path is not a file URL. */
  serve(req: http.IncomingMessage, res: http.ServerResponse, pathname: string, ok: (token: string | undefined) => boolean): boolean {
    const m = /^\/files-pri\/([A-Z0-9]+)-(F[A-Z0-9]+)\/(?:download\/)?[^/]+$/.exec(pathname);
    if (!m) return false;
    const authorization = req.headers.authorization;
    const token = /^Bearer\s+(.+)$/i.exec(authorization ?? "")?.[1];
    const f = m[1] === this.teamId ? this.files.get(m[2]!) : undefined;
    const note = (status: number) => this.downloads.push({ path: pathname, authorization, status, at: Date.now() });
    if (!ok(token)) {
      note(302);
      res.writeHead(302, { location: `https://${this.teamDomain}.slack.com/?redir=${encodeURIComponent(pathname)}` });
      res.end();
      return true;
    }
    if (!f) {
      note(404);
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("File not found");
      return true;
    }
    note(200);
    res.writeHead(200, { "content-type": String(f.object.mimetype), "content-length": f.data.length });
    res.end(f.data);
    return true;
  }
}

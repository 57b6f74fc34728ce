import http from "node:http";

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The client's own address (127.0.0.2 is another loopback client on Linux). */
  localAddress?: string;
}

/**
 * One request over a fresh socket (node:http: fetch may not set Host or a
 * local address). An event stream is answered with its headers only.
 */
export function request(base: string, path: string, o: RequestOptions = {}): Promise<Answer> {
  const u = new URL(base.replace("//0.0.0.0:", "//127.0.0.1:"));
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path,
        method: o.method ?? "GET",
        headers: { connection: "close", ...o.headers },
        agent: false,
        ...(o.localAddress && { localAddress: o.localAddress }),
      },
      (res) => {
        let body = "";
        if (String(res.headers["content-type"]).startsWith("text/event-stream")) {
          resolve({ status: res.statusCode!, headers: res.headers, body });
          res.destroy();
          return;
        }
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${path}`)));
    req.end(o.body);
  });
}

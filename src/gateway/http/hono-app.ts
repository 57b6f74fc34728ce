import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { TrieRouter } from "hono/router/trie-router";
import { errInfo } from "../../log.js";
import { starting } from "./answers.js";
import { methodNotAllowed } from "./method-not-allowed.js";
import type { Edge, Env, ListenerRole, Route } from "./routes.js";
import { answer, errorAnswer, safePath, serveRoute } from "./serve.js";
import { servedInSpan } from "./trace.js";

/**
 * The Hono app one listener serves: the routes of its role (a public
 * listener gets the public ones only), each traced when it asks to be, a
 * request id on every answer, 405 only to whoever may see the route, 404
 * for a path nobody mounted (the 503 of a start while the gateway starts),
 * and a logged JSON 500 for a handler that throws.
 */
export function buildApp(edge: Edge, routes: readonly Route[], role: ListenerRole): Hono<Env> {
  const served = routes.filter((r) => role !== "public" || r.access === "public");
  // A trie, not Hono's default RegExpRouter: the app is rebuilt each time an adapter mounts a route
  // while the gateway starts, and the RegExpRouter compiles every route into one expression on the
  // first request after each rebuild (a /healthz poll during the start paid it once per adapter).
  // The trie has no build step; a match costs about half a microsecond more per request.
  const app = new Hono<Env>({ router: new TrieRouter() });
  app.use(requestId({ limitLength: 64 }));
  app.use(methodNotAllowed(edge, served));
  for (const r of served) {
    app.on(r.method, r.path, (c) =>
      r.opts.trace
        ? servedInSpan(
            r.opts.trace,
            { method: r.method, route: r.path, path: c.req.path, url: c.req.url, headers: c.env.incoming.headers },
            () => serveRoute(edge, c, r),
            r.opts.traceCaller,
          )
        : serveRoute(edge, c, r),
    );
  }
  app.notFound((c) => (edge.starting ? answer(c, starting()) : errorAnswer(c, 404, "not found")));
  app.onError((err, c) => {
    edge.log.error({ requestId: c.get("requestId"), method: c.req.method, path: safePath(c), err: errInfo(err) }, "HTTP handler failed");
    edge.metrics?.httpErrors.inc();
    return errorAnswer(c, 500, "internal error");
  });
  return app;
}

import type { Context, MiddlewareHandler } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import { errorAnswer, requestFacts } from "./serve.js";
import type { Edge, Env, Route } from "./routes.js";

/**
 * 405 with Allow for a path mounted for other methods, told only to a
 * caller who could reach one of those routes: any public route, a `login`
 * route past the Host check, an operator route past the operator check.
 * Anyone else gets the answer of a path nobody mounted (404, or the 503 while
 * the gateway starts), so a wrong method does not tell a stranger that an
 * operator route is there. Nothing is counted as refused: an unknown path is not.
 */
export function methodNotAllowed(edge: Edge, routes: readonly Route[]): MiddlewareHandler<Env> {
  const byPath = new TrieRouter<Route>();
  for (const r of routes) byPath.add("ALL", r.path, r);
  return async (c, next) => {
    await next();
    if (c.res.status !== 404 || c.error) return;
    const mounted = byPath.match("ALL", c.req.path)[0].map(([r]) => r);
    if (mounted.length === 0) return;
    const methods = await methodsShown(edge, c, mounted);
    if (methods.length === 0 || methods.includes(c.req.method)) return;
    const allow = methods.join(", ");
    // Unset first: Hono's setter would carry the 404's headers over to the new answer.
    c.res = undefined;
    c.res = errorAnswer(c, 405, `method not allowed: use ${allow}`, { allow });
  };
}

/** The methods of the routes mounted at this path that this caller could reach, HEAD with GET. */
async function methodsShown(edge: Edge, c: Context<Env>, mounted: readonly Route[]): Promise<string[]> {
  const facts = requestFacts(c);
  const host = facts.headers.host;
  const hostOk = !Array.isArray(host) && edge.auth.hostAllowed(host) && edge.auth.hostAllowed(facts.urlHost);
  let operator: boolean | undefined;
  const shown = new Set<string>();
  for (const r of mounted) {
    if (r.access === "login" && !hostOk) continue;
    if (r.access === "operator") {
      operator ??=
        hostOk &&
        (await edge.auth.check(facts).then(
          (v) => v.ok,
          () => false,
        ));
      if (!operator) continue;
    }
    shown.add(r.method);
    if (r.method === "GET") shown.add("HEAD");
  }
  return [...shown];
}

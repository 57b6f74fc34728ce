import { signOutEverywhere } from "../gateway/http/login-sessions.js";
import type { Database } from "../store/db.js";
import { KvStore } from "../store/kv.js";
import type { Output } from "./output.js";

/**
 * `switchboard logout-all`: signs every console session out, in every
 * gateway process on this database, running or not (a new sign-in
 * generation in the kv store; each request's cookie is checked against it).
 * Bearer tokens are not sessions: to stop one, change OPERATOR_TOKEN.
 */
export async function logoutAllCommand(db: Database, out: Output): Promise<number> {
  await signOutEverywhere(new KvStore(db));
  return out.ok({ signedOut: "all" }, ["Every console session is signed out: operators sign in again at /login with OPERATOR_TOKEN."]);
}

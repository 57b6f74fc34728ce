import type { webApi } from "@slack/bolt";
import type { Logger } from "../../src/log.js";
import { AdapterError } from "../types.js";
import { toAdapterError } from "./errors.js";
import { isSlackId } from "./ids.js";
import type { SlackIdentity } from "./normalize.js";

/** The bot's identity from auth.test, refused unless the token is a bot token. */
export async function whoAmI(client: webApi.WebClient, log: Logger): Promise<{ me: SlackIdentity; username: string | undefined }> {
  let auth: webApi.AuthTestResponse;
  try {
    auth = await client.auth.test();
  } catch (err) {
    throw toAdapterError(err, "auth.test");
  }
  if (!isSlackId(auth.user_id) || !isSlackId(auth.team_id))
    throw new AdapterError("slack", "Rejected", "Slack auth.test did not return a bot user and team: is SLACK_BOT_TOKEN a bot token (xoxb-…)?");
  const me: SlackIdentity = {
    teamId: auth.team_id,
    ...(typeof auth.enterprise_id === "string" && auth.enterprise_id !== "" ? { enterpriseId: auth.enterprise_id } : {}),
    botUserId: auth.user_id,
    ...(typeof auth.bot_id === "string" ? { botId: auth.bot_id } : {}),
    ...(typeof auth.app_id === "string" && auth.app_id !== "" ? { appId: auth.app_id } : {}),
  };
  if (!me.appId) log.warn("Slack auth.test named no app id; events cannot be checked against api_app_id");
  return { me, username: typeof auth.user === "string" ? auth.user : undefined };
}

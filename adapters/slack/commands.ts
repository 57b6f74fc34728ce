/**
 * Slash commands -> InboundEnvelope. Slack apps register their slash
 * commands in the app manifest (there is no API like Telegram's
 * setMyCommands), so the usual setup is one umbrella command:
 * `/switchboard new` becomes the chat command `/new`, and the gateway's
 * command interceptors handle it like a typed `/new`.
 */
import type { InboundEnvelope } from "../types.js";
import { PLATFORM, chatExternalId, commandEventId, dmChannel, encodeReplyAddress, groupChannel, isSlackId } from "./ids.js";
import { type SlackIdentity, workspaceOf } from "./normalize.js";

/** The umbrella command's name, as registered in the Slack app. */
export const UMBRELLA_COMMAND = "/switchboard";

const WORD = /^[a-z][a-z0-9_-]{0,31}$/i;

/**
 * The chat text a slash command stands for. `/switchboard new` -> `/new`;
 * `/switchboard` alone -> `/help`; `/switchboard what is up` (not a known
 * command) -> the plain message `what is up`. `known` holds every chat
 * command and alias, operator-only ones included, so `/switchboard approve
 * <code>` is the command and never reaches the agent. Any other registered command
 * (`/new x`) is passed on as typed.
 */
export function commandText(command: string, text: string, known: ReadonlyArray<string>): string {
  const args = text.trim();
  if (command.toLowerCase() !== UMBRELLA_COMMAND) return args ? `${command} ${args}` : command;
  if (args === "") return "/help";
  const [first = "", ...rest] = args.split(/\s+/);
  const name = first.replace(/^\//, "").toLowerCase();
  // "/switchboard /x" is always meant as a command (an unknown one gets the gateway's "Unknown command").
  const isCommand = WORD.test(name) && (first.startsWith("/") || known.length === 0 || known.includes(name));
  if (!isCommand) return args;
  return rest.length > 0 ? `/${name} ${rest.join(" ")}` : `/${name}`;
}

/** A slash command payload (form fields in HTTP mode, the envelope payload in Socket Mode). */
export function normalizeCommand(
  fields: Record<string, unknown>,
  me: SlackIdentity,
  known: ReadonlyArray<string>,
  now = new Date(),
): InboundEnvelope | undefined {
  const channelId = fields.channel_id;
  const user = fields.user_id;
  const command = fields.command;
  const triggerId = fields.trigger_id;
  if (!isSlackId(channelId) || !isSlackId(user) || typeof command !== "string" || typeof triggerId !== "string" || triggerId === "") return undefined;
  // The installation's workspace, as for events (normalize.ts): in a Slack Connect channel the
  // payload's team_id is the invoking user's, which would give each organisation its own session.
  const teamId = me.teamId;
  const text = commandText(command, typeof fields.text === "string" ? fields.text : "", known);
  // Slack does not say what kind of conversation a command came from; D… ids are DMs.
  const isDm = channelId.startsWith("D");
  const env: InboundEnvelope = {
    platform: PLATFORM,
    botId: me.botUserId,
    chatKind: isDm ? "private" : "group",
    chatId: chatExternalId(teamId, channelId),
    senderId: user,
    text,
    mentioned: true,
    eventId: commandEventId(triggerId),
    occurredAt: now,
    replyTo: encodeReplyAddress(me.botUserId, { channel: channelId, ...workspaceOf(me) }),
    channel: isDm ? dmChannel(teamId, me.botUserId, channelId) : groupChannel(teamId, me.botUserId, channelId),
  };
  if (typeof fields.user_name === "string" && fields.user_name !== "") env.senderName = fields.user_name;
  if (me.installerUserId !== undefined && user === me.installerUserId) env.senderAdministers = true;
  env.workspace = teamId;
  return env;
}

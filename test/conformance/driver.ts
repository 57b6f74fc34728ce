import type { Adapter } from "../../adapters/types.js";

/** Where a message goes on a platform fake: a DM with a user, a group, or a thread in a group. */
export type Place = { dm: string } | { group: string } | { group: string; thread: string };

/**
 * One platform's side of the conformance suite: its fake, its real SDK (inside
 * the adapter), and how a user acts on that platform. Scenarios are written
 * once against this interface (test/conformance/suite.ts).
 */
export interface ConformanceDriver {
  readonly name: string;
  /** Starts the fake and builds the adapter that talks to it. */
  setup(): Promise<{ adapter: Adapter; env?: Record<string, string> }>;
  /** Called once the gateway (and so the adapter) is running, with the gateway's base URL. */
  started?(baseUrl: string): Promise<void>;
  /** A user says something. `mention` addresses the bot in a group. */
  say(place: Place, user: string, text: string, opts?: { mention?: boolean }): Promise<void>;
  /** The platform delivers the previous message of `user` in `place` again (a retry or redelivery). */
  redeliverLast(place: Place, user: string): Promise<void>;
  /** The next `count` sends answer 429 with this retry-after. */
  rateLimitSends(retryAfterSec: number, count: number): void;
  /** What the bot has shown in `place`, in order, as users see it. */
  replies(place: Place): string[];
  /**
   * For a platform that styles notices apart from their text (the console): the severity each
   * reply in `place` is shown with. Platforms without it carry the severity in the text itself.
   */
  severities?(place: Place): Array<string | undefined>;
  /** The platform's message length limit. */
  readonly maxTextLength: number;
  teardown(): Promise<void>;
  /** Approval cards on the platform's own buttons (issue 17). */
  readonly approvals?: ApprovalDriver;
  /** Who is who in groups, for GROUP_POLICY (issue 26); unset for a trusted adapter (the console), where it does not apply. */
  readonly groups?: GroupDriver;
  /** How AGENTS_CONFIG's routes name a place (issue 29). */
  readonly routing: RoutingDriver;
}

export interface RoutingDriver {
  /** The place's chat id as the adapter puts it on the envelope (a route's `chat`). */
  chatId(place: Place): string;
  /**
   * A group in a workspace of its own where the platform has workspaces, and
   * the route fields naming it (a Discord guild; a Slack team, with the
   * channel, since every scenario shares the fake's one team). Unset: none.
   */
  workspaceGroup?(name: string): { place: Place; match: { guild: string } | { team: string; chat: string } };
}

export interface GroupDriver {
  /** The platform's id of `user`, as ADMIN_USERS and ALLOW_FROM write it after `platform:`. */
  userId(user: string): string;
  /** The group's chat id, as ALLOW_GROUPS writes it after `platform:`. */
  chatId(place: Place): string;
  /** A group the bot may leave without leaving any other scenario's (on Discord: a channel in a server of its own). */
  separateGroup(name: string): Place;
  /** Whether the bot left the group, as the platform recorded it (leaveChat, guild leave, conversations.leave). */
  hasLeft(place: Place): boolean;
}

export interface CardView {
  /** The platform message id of the card. */
  messageId: string;
  /** The card as users see it now (after edits). */
  text: string;
  /** Whether its buttons are still there. */
  buttons: boolean;
}

export interface ApprovalDriver {
  /** The approval cards the bot shows in `place`, in order. */
  cards(place: Place): CardView[];
  /** `user` presses a card's button, the way the platform delivers the press (through the real SDK). */
  click(place: Place, user: string, messageId: string, action: "approve" | "deny" | "always"): Promise<void>;
  /** What `user` was told privately about their presses (alerts, ephemeral messages), in order. */
  privateAnswers(place: Place, user: string): string[];
}

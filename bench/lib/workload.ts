/**
 * The message stream of the core scenarios: `chats` chats, message j goes to
 * chat j % chats; every fifth chat is a group with three senders (20% of
 * messages in groups). Every id is a token `bk<...>z` so the floor replay
 * can give each replay fresh ids with one regex.
 */
export interface WorkItem {
  chat: string;
  sender: string;
  group: boolean;
  eventId: string;
}

export function workItem(j: number, chats: number): WorkItem {
  const i = j % chats;
  const group = i % 5 === 0;
  const sender = group ? `bk${i}s${Math.floor(j / chats) % 3}z` : `bk${i}z`;
  return { chat: `bk${i}z`, sender, group, eventId: `bk${i}e${j}z` };
}

export const messageText = (eventId: string) => `m ${eventId}`;
/** The eventId a reply answers ("echo: m <eventId>"). */
export const eventOfReply = (text: string) => text.slice("echo: m ".length);

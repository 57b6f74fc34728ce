/** /whoami (who and where the sender is) and /help (the commands this sender may run). */
import type { CommandOptions, CommandSpec } from "./spec.js";

export const whoamiCommand: CommandSpec = {
  name: "whoami",
  summary: "show who and where you are",
  run(ctx) {
    const o = ctx.event.origin;
    ctx.notify(
      "info",
      [
        `platform: ${o.platform}`,
        `sender: ${o.senderId}${o.senderName ? ` (${o.senderName})` : ""}`,
        `user: ${o.userId ?? "(unknown)"}`,
        `chat: ${o.chatId}${o.threadId ? ` thread ${o.threadId}` : ""}`,
        `session: ${ctx.session.id}`,
      ].join("\n"),
    );
  },
};

/** /help (and /start, a platform's first message): lists `commands` and itself, an operator's ones only to operators. */
export function helpCommand(commands: readonly CommandSpec[], opts: Pick<CommandOptions, "adminCommands">): CommandSpec {
  const help: CommandSpec = {
    name: "help",
    aliases: ["start"],
    summary: "list the commands",
    run(ctx) {
      const visible = commands.filter((c) => {
        const access = c.access ?? "anyone";
        if (access === "operator") return ctx.event.isOperator === true;
        return (access === "anyone" && !opts.adminCommands?.includes(c.name)) || ctx.event.isAdmin;
      });
      ctx.notify("info", ["Commands:", ...[...visible, help].map((c) => `${c.usage ?? `/${c.name}`} - ${c.summary}`)].join("\n"));
    },
  };
  return help;
}

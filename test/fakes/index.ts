/**
 * Platform fakes for tests: Telegram Bot API, Discord REST + gateway, Slack
 * Web API / Events API / Socket Mode, all on 127.0.0.1. See README.md here.
 */
export * from "./telegram.js";
export * from "./discord.js";
export * from "./slack.js";

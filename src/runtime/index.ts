export * from "./events.js";
export * from "./event-stream.js";
export * from "./sink-router.js";
export * from "./ledger.js";
export * from "./live-session.js";
export * from "./runner.js";
export { executeTurn, type TurnOutcome } from "./turn.js";
export * from "./commands/index.js";
export * from "./reflection.js";

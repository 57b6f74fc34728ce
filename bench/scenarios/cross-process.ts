import { runSharedSendBudget, TELEGRAM_PER_SECOND, type SendBudgetRun } from "../../test/reliability/multiprocess-send-budget.js";
import { freshPgUrl } from "../lib/db.js";
import { pick } from "../lib/mode.js";
import { progress } from "../lib/progress.js";
import { buildCompiled } from "./startup.js";

export interface CrossProcessResult {
  params: { quick: boolean; processes: number; chats: number; telegram_limit_per_s: number; method: string };
  /** The most sendMessage attempts the fake Telegram received in any 1 s window (429s counted). */
  peak_sends_per_s: number;
  /** Every message answered exactly once, no 429 from the fake's bot-wide limit, no secret in any log. */
  answered_once: boolean;
  run: Omit<SendBudgetRun, "firstProblems">;
}

const METHOD =
  "the reliability suite's run (test/reliability/multiprocess-send-budget.ts): compiled `switchboard serve` processes on one PostgreSQL database (SHARED_DATABASE=true), one Telegram bot by webhook through a round-robin proxy, one message in each chat injected at once; the fake Telegram stamps each sendMessage on arrival and enforces 30/s bot-wide";

/** Issue 31 item 7: several processes of one bot keep within Telegram's bot-wide 30 msgs/s together. */
export async function runCrossProcess(quick: boolean): Promise<CrossProcessResult> {
  const processes = 3;
  const chats = pick(quick, 300, 150, 60);
  // The processes run the compiled build, as `npm start` does (bin/switchboard.mjs serve).
  buildCompiled();
  progress(`cross_process: ${processes} processes, ${chats} chats`);
  const { firstProblems, ...run } = await runSharedSendBudget({ databaseUrl: await freshPgUrl(), processes, chats });
  for (const line of firstProblems) progress(`cross_process: ${line.slice(0, 300)}`, true);
  return {
    params: { quick, processes, chats, telegram_limit_per_s: TELEGRAM_PER_SECOND, method: METHOD },
    peak_sends_per_s: run.peakSendsPerSecond,
    answered_once: run.answered === chats && run.duplicates === 0 && run.botLimit429s === 0 && run.secretLeaks === 0,
    run,
  };
}

import { describe } from "vitest";
import { telegramStoreFaultCases } from "./telegram-store-faults.cases.js";

describe("a store fault at each call site of a Telegram message's path, on SQLite", () => {
  telegramStoreFaultCases("sqlite");
});

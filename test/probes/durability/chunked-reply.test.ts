import { describe } from "vitest";
import { chunkedReplyCases } from "./chunked-reply.cases.js";

describe("a reply in several chunks, interrupted half-way, on SQLite (the sent log)", () => {
  chunkedReplyCases("sqlite");
});

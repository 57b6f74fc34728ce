import { describe } from "vitest";
import { chunkedReplyCases } from "./chunked-reply.cases.js";

describe("a reply in several chunks, interrupted half-way, on PostgreSQL (no sent log)", () => {
  chunkedReplyCases("postgresql");
});

/** What the bench's in-process apps run with beyond the test defaults: groups answered without a mention, loopback only. */
export const BENCH_ENV = { GROUP_REQUIRE_MENTION: "false", HTTP_HOST: "127.0.0.1" } as const;

import { defineConfig } from "vitest/config";

/**
 * `npm run test:reliability`: fault injection, forgery, secrets, fuzzing, odd
 * input and kill -9 crashes (test/reliability/), then the multi-process
 * scenario on its own. Same throwaway PostgreSQL as the main suite.
 */
export default defineConfig({
  test: {
    exclude: ["node_modules/**"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
    pool: "forks",
    // Processes the tests spawn through bin/switchboard.mjs run the TypeScript sources (tsx), so
    // a test never runs a stale dist/; test/build.slow.test.ts covers the compiled build itself.
    env: { SWITCHBOARD_FROM_SOURCE: "1" },
    // Two cores: more workers only add contention for the shared databases.
    maxWorkers: 2,
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "reliability",
          include: ["test/reliability/**/*.test.ts"],
          exclude: ["node_modules/**", "test/reliability/multiprocess.test.ts", "test/reliability/http-load.test.ts"],
        },
      },
      {
        // Three gateway processes and PostgreSQL at a sustained 65 msgs/s: on two cores it gets
        // the machine to itself, after the rest (sharing it with the crash runs starves both).
        extends: true,
        test: { name: "multiprocess", include: ["test/reliability/multiprocess.test.ts"], sequence: { groupOrder: 1 } },
      },
      {
        // 1,000 connections against one gateway, timed: alone on the machine too.
        extends: true,
        test: { name: "http-load", include: ["test/reliability/http-load.test.ts"], sequence: { groupOrder: 2 } },
      },
    ],
  },
});

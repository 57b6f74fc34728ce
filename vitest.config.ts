import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/reliability/**", "node_modules/**"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Processes the tests spawn through bin/switchboard.mjs run the TypeScript sources (tsx), so
    // a test never runs a stale dist/; test/build.test.ts covers the compiled build itself.
    env: { SWITCHBOARD_FROM_SOURCE: "1" },
    // Two cores: more workers only add contention for the shared databases.
    maxWorkers: 2,
    reporters: ["default"],
  },
});

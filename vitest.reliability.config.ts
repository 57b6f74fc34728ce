import { defineConfig } from "vitest/config";

/**
 * `npm run test:reliability`: fault injection, forgery, secrets, fuzzing and
 * odd input (test/reliability/). Same throwaway PostgreSQL as the main suite.
 */
export default defineConfig({
  test: {
    include: ["test/reliability/**/*.test.ts"],
    exclude: ["node_modules/**"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
    pool: "forks",
    // Two cores: more workers only add contention for the shared databases.
    maxWorkers: 2,
    reporters: ["default"],
  },
});

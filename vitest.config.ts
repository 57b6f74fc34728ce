import { defineConfig } from "vitest/config";

/**
 * The main suite, in three projects told apart by file name:
 * - `unit`: every `test/**\/*.test.ts` that needs neither PostgreSQL nor Chromium
 *   (`npm run test:unit`, the fast tier: no database server is started);
 * - `pg`: `*.pg.test.ts`, which get the throwaway PostgreSQL server of the globalSetup;
 * - `browser`: `*.browser.test.ts`, which drive headless Chromium;
 * - `slow`: `*.slow.test.ts`, which spawn real processes (`switchboard serve`, npm, the build, the
 *   Dockerfile's steps) or run thousands of turns: measured at 7 s to 6 min each on two cores.
 * `test/reliability/` has its own config (vitest.reliability.config.ts). See test/README.md.
 */
export default defineConfig({
  test: {
    exclude: ["test/reliability/**", "node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
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
          name: "unit",
          include: ["test/**/*.test.ts"],
          // One module graph per worker instead of one per file: importing the gateway, Prisma and the
          // SDKs again for every file was most of this tier's CPU (measured: 105 s of CPU with isolation,
          // 46 s without, same 794 tests). So a unit file must undo what it changes in the process:
          // restore real timers, mocks and process.env, and remove its listeners (test/README.md).
          isolate: false,
          // Four workers on two cores: this tier waits more than it computes (platform pacing, 429
          // retry_after, approval timeouts: measured 116 s of test time for 52 s of CPU), so two
          // workers left the cores half idle (66 s wall; four: 48 s). Its files share no database.
          maxWorkers: 4,
          // Vitest runs projects of one group together and needs one maxWorkers per group: this tier runs
          // first, on its own four workers, then the others together on two.
          sequence: { groupOrder: 0 },
          setupFiles: ["test/support/open-handles.ts"],
          exclude: ["test/reliability/**", "node_modules/**", "test/**/*.pg.test.ts", "test/**/*.browser.test.ts", "test/**/*.slow.test.ts"],
        },
      },
      {
        extends: true,
        test: { name: "pg", sequence: { groupOrder: 1 }, include: ["test/**/*.pg.test.ts"], globalSetup: ["test/support/global-setup.ts"] },
      },
      {
        extends: true,
        test: { name: "browser", sequence: { groupOrder: 1 }, include: ["test/**/*.browser.test.ts"], globalSetup: ["test/support/browser-setup.ts"] },
      },
      {
        extends: true,
        test: { name: "slow", sequence: { groupOrder: 1 }, include: ["test/**/*.slow.test.ts"] },
      },
    ],
  },
});

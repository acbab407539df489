import { defineConfig } from "vitest/config";

// The suite runs against a real chartr that test/global-setup.ts starts (SQLite, or DATABASE_URL's
// PostgreSQL). test/pending/ holds the tests of operations chartr's main does not serve yet:
// `npm run test:pending` runs them (vitest.pending.config.ts).
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/pending/**", "node_modules/**"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});

import { defineConfig } from "vitest/config";

// The tests of operations being built on other branches (see test/pending/README.md).
export default defineConfig({
  test: {
    include: ["test/pending/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});

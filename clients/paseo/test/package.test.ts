/** The package as a daemon installs it: ESM built by tsc, no runtime dependency. */

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

describe("@chartr/paseo-store", () => {
  it("has no runtime dependency", () => {
    const manifest = JSON.parse(readFileSync(path.join(PACKAGE, "package.json"), "utf8"));
    expect(manifest.name).toBe("@chartr/paseo-store");
    expect(manifest.type).toBe("module");
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.peerDependencies ?? {}).toEqual({});
    expect(Object.keys(manifest.devDependencies).sort()).toEqual(["@types/node", "typescript", "vitest"]);
  });

  it("builds with tsc and imports as an ES module in plain Node", () => {
    const out = mkdtempSync(path.join(tmpdir(), "paseo-store-build-"));
    try {
      const tsc = path.join(PACKAGE, "node_modules", "typescript", "bin", "tsc");
      execFileSync(process.execPath, [tsc, "-p", path.join(PACKAGE, "tsconfig.json"), "--outDir", out], {
        cwd: PACKAGE,
      });
      const script = `
        const m = await import(${JSON.stringify(path.join(out, "index.js"))});
        const store = new m.ChartrAgentTimelineStore({ baseUrl: "http://127.0.0.1:1", token: "t" });
        console.log(JSON.stringify({
          exports: Object.keys(m).sort(),
          methods: Object.getOwnPropertyNames(Object.getPrototypeOf(store)).sort(),
          errors: new m.ChartrConflictError("x") instanceof m.ChartrError,
        }));`;
      const shown = JSON.parse(
        execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: out }).toString(),
      );
      expect(shown.exports).toEqual([
        "ChartrAgentRecords",
        "ChartrAgentTimelineStore",
        "ChartrAuthError",
        "ChartrConflictError",
        "ChartrError",
        "ChartrNetworkError",
        "ChartrUnknownAgentError",
      ]);
      expect(shown.methods).toEqual(
        expect.arrayContaining([
          "appendCommitted",
          "fetchCommitted",
          "getLatestCommittedSeq",
          "getCommittedRows",
          "getLastItem",
          "getLastAssistantMessage",
          "deleteAgent",
          "bulkInsert",
          "updateCommittedRow",
          "beginBackfill",
          "completeBackfill",
          "replaceCommitted",
          "fetchProjectedCommitted",
          "hasCommittedUserMessage",
          "registerAgent",
          "flush",
        ]),
      );
      expect(shown.errors).toBe(true);
      expect(readFileSync(path.join(out, "index.d.ts"), "utf8")).toContain("paseo-types.js");
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

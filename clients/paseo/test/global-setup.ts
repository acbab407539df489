/**
 * Starts one chartr for the whole suite: migrate, a token minted with create_api_token,
 * gunicorn, then a project and a workspace made over the API. SQLite in a temporary data dir,
 * or PostgreSQL when DATABASE_URL is set (the database must exist; migrate brings it up to date).
 */

import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";

import { ChartrServer, chartrEnv, manage } from "./support/server.js";

export default async function setup(project: TestProject) {
  const root = mkdtempSync(path.join(tmpdir(), "chartr-paseo-"));
  mkdirSync(path.join(root, "home"));
  const env = chartrEnv(root);
  const server = new ChartrServer(env, path.join(root, "server.log"));
  try {
    await manage(["migrate", "--no-input", "-v", "0"], env);
    const [token, readOnlyToken] = (
      await Promise.all([
        manage(["create_api_token", "paseo-store-tests"], env),
        manage(["create_api_token", "paseo-store-tests-read-only", "--read-only"], env),
      ])
    ).map((out) => out.trim()) as [string, string];
    await server.start();
    const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    const workspaceDir = `/srv/paseo-${randomUUID()}`;
    const project_ = await post(server.baseUrl, "/api/v1/projects", headers, { directory: workspaceDir, kind: "git" });
    const workspace = await post(server.baseUrl, "/api/v1/workspaces", headers, {
      project_id: project_.id,
      directory: workspaceDir,
      kind: "checkout",
    });
    project.provide("chartr", {
      baseUrl: server.baseUrl,
      token,
      readOnlyToken,
      workspaceId: workspace.id,
      workspaceDir,
      env,
      root,
    });
  } catch (error) {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  return async () => {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  };
}

async function post(baseUrl: string, url: string, headers: Record<string, string>, body: unknown) {
  const response = await fetch(`${baseUrl}${url}`, { method: "POST", headers, body: JSON.stringify(body) });
  if (response.status !== 201) throw new Error(`POST ${url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as { id: number };
}

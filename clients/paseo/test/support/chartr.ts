/** What the tests share: the server global-setup started, and agents made over its API. */

import { randomUUID } from "node:crypto";
import { inject } from "vitest";

import { ChartrAgentTimelineStore } from "../../src/index.js";

export interface ChartrContext {
  baseUrl: string;
  token: string;
  readOnlyToken: string;
  workspaceId: number;
  workspaceDir: string;
  env: Record<string, string>;
  root: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    chartr: ChartrContext;
  }
}

export function chartr(): ChartrContext {
  return inject("chartr");
}

export function api(path: string, init: RequestInit = {}, context = chartr()): Promise<Response> {
  return fetch(`${context.baseUrl}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${context.token}`, "Content-Type": "application/json", ...init.headers },
  });
}

/** A new agent (a fresh id) in the suite's workspace; its timeline is empty. */
export async function newAgent(context = chartr()): Promise<string> {
  const agentId = `paseo-${randomUUID()}`;
  const response = await api(
    "/api/v1/agents",
    {
      method: "POST",
      body: JSON.stringify({ agent_id: agentId, workspace_id: context.workspaceId, provider: "claude" }),
    },
    context,
  );
  if (response.status !== 201) throw new Error(`creating ${agentId}: ${response.status} ${await response.text()}`);
  return agentId;
}

export function store(context = chartr()): ChartrAgentTimelineStore {
  return new ChartrAgentTimelineStore({ baseUrl: context.baseUrl, token: context.token });
}

import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { Agent } from "../../schema/agents.ts";
import { fromWire } from "../../schema/wire.ts";
import { openSecret, secretBoxKey } from "../../secrets/secret-box.ts";
import { toolSecretContext } from "../../tools/definitions.ts";
import { mcpCredentialContext } from "../../tools/mcp-definitions.ts";
import type { TenantCopies } from "../../tools/tenant-copies.ts";
import { tenantStub } from "../../worker/env.ts";
import { call, json } from "./helpers.ts";
import { ARGS_SCHEMA } from "./tool-api-helpers.ts";

// Tenant tools, MCP servers and the agents that name them, over REST, and the copies the tenant
// object makes for a session (its agentForSession RPC, what session creation from an agent calls).

export const HTTP_TOOL = { kind: "http", description: "Looks up an order", parameters: ARGS_SCHEMA, url: "https://tools.example.com/lookup" };
export const CLIENT_TOOL = { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA };

export const putTool = (key: string, name: string, body: unknown): Promise<Response> => call(`/v1/tools/${name}`, { method: "PUT", body, token: key });
export const createAgent = async (key: string, body: unknown): Promise<Agent> => json<Agent>(await call("/v1/agents", { body, token: key }), 201);
export const patchAgent = async (key: string, id: string, body: unknown): Promise<Agent> => json<Agent>(await call(`/v1/agents/${id}`, { method: "PATCH", body, token: key }), 200);

/** What a session `sessionId` bound to the agent version would copy, straight from the tenant object. */
export async function copiesFor(tenantId: string, agentId: string, version: number | undefined, sessionId: string): Promise<{ agent: Agent; copies: TenantCopies }> {
  const result = fromWire(await tenantStub(env, tenantId).agentForSession(agentId, version, sessionId));
  if (!result.ok) throw new Error(`agentForSession refused: ${JSON.stringify(result.error)}`);
  return result.value;
}

/** The signing secret of a session's copy, opened as the session opens it when it calls the tool. */
export async function copiedSecret(copies: TenantCopies, sessionId: string, name: string): Promise<string> {
  const sealed = copies.tools[name]?.sealedSecret;
  expect(sealed).toEqual(expect.any(String));
  return openSecret(await secretBoxKey(env.SECRETS_KEY, "tool-secret"), sealed ?? "", toolSecretContext(sessionId, name));
}

/** The headers of a session's copy of an MCP server, opened as the session opens them for a call. */
export async function copiedHeaders(copies: TenantCopies, sessionId: string, name: string): Promise<Record<string, string>> {
  const sealed = copies.mcpServers[name]?.sealedHeaders;
  expect(sealed).toEqual(expect.any(String));
  return JSON.parse(await openSecret(await secretBoxKey(env.SECRETS_KEY, "mcp-credential"), sealed ?? "", mcpCredentialContext(sessionId, name)));
}

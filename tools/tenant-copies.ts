import type { Agent } from "../schema/agents.ts";
import type { StoredToolDefinition } from "./definitions.ts";
import type { StoredMcpServer } from "./mcp-definitions.ts";

// What a session bound to an agent version holds of the tenant's own tools and MCP servers
// (spec/API.md "Tenant tools and MCP servers"): sealed copies of the revisions the version pinned,
// made by the tenant object for that one session, so that a tool call never asks the tenant
// object for a definition or a secret. A fork re-seals the copies like any session tool.

/** Where a session's copy came from: the tenant tool (or MCP server) and the revision pinned. */
export interface TenantSource {
  name: string;
  revision: number;
}

export interface TenantCopies {
  /**
   * By the tool's name in the session (the key the agent version gives it): the stored definition
   * of the pinned revision, an http tool's secret sealed for this session
   * (`toolSecretContext(sessionId, name)`), with `tenantTool` naming its source.
   */
  tools: Record<string, StoredToolDefinition>;
  /**
   * By the server's name in the session: the stored server of the pinned revision, its headers
   * sealed for this session (`mcpCredentialContext(sessionId, name)`), with the tools the tenant's
   * last discovery found and `tenantServer` naming its source.
   */
  mcpServers: Record<string, StoredMcpServer>;
}

export const NO_TENANT_COPIES: TenantCopies = { tools: {}, mcpServers: {} };

/** An agent version and what a session bound to it copies of the tenant's tools (the tenant's `agentForSession`). */
export interface AgentForSession {
  agent: Agent;
  copies: TenantCopies;
}

/** Where a tenant http tool's secret is sealed at rest (purpose "tool-secret"); a session's copy is sealed anew for `toolSecretContext`. */
export function tenantToolSecretContext(tenantId: string, name: string): string {
  return `tenant:${tenantId}/tool:${name}`;
}

/** Where a tenant MCP server's headers are sealed at rest (purpose "mcp-credential"); a session's copy is sealed anew for `mcpCredentialContext`. */
export function tenantMcpCredentialContext(tenantId: string, name: string): string {
  return `tenant:${tenantId}/mcp:${name}`;
}

import type { PinnedAgentDefinition } from "../../schema/agents.ts";
import { sealSecret, secretBoxKey } from "../../secrets/secret-box.ts";
import { openStoredSecret } from "../rpc/stored-secrets.ts";
import { toolSecretContext, type StoredToolDefinition } from "../../tools/definitions.ts";
import { mcpCredentialContext, type StoredMcpServer } from "../../tools/mcp-definitions.ts";
import { NO_TENANT_COPIES, tenantMcpCredentialContext, tenantToolSecretContext, type TenantCopies, type TenantSource } from "../../tools/tenant-copies.ts";
import { tenantMcpStore, tenantToolStore, type TenantRevisions } from "./tenant-revisions.ts";

// The copies a session bound to an agent version holds of the tenant tools and MCP servers the
// version pinned (tools/tenant-copies.ts): each pinned revision's stored definition, its secret
// (or headers) opened from the tenant's seal and sealed again for that one session, so that the
// session never asks the tenant object for a definition or a secret.

export interface CopyScope {
  tenantId: string;
  sessionId: string;
  secretsKey: string;
}

/** Reads every pinned revision first, in one synchronous turn, then seals (nothing is written). */
export async function tenantCopies(sql: SqlStorage, version: PinnedAgentDefinition, scope: CopyScope): Promise<TenantCopies> {
  const toolStore = tenantToolStore(sql);
  const serverStore = tenantMcpStore(sql);
  const tools = Object.entries(version.tools ?? {}).flatMap(([name, tool]) => {
    if (tool.kind !== "tenant") return [];
    const source = { name: tool.tool, revision: tool.revision };
    return [{ name, source, stored: pinned(toolStore, source) }];
  });
  const servers = (version.mcpServers ?? []).map((source) => ({ name: source.name, source, stored: pinned(serverStore, source) }));
  if (tools.length === 0 && servers.length === 0) return NO_TENANT_COPIES;
  const copies: TenantCopies = { tools: {}, mcpServers: {} };
  const toolKey = tools.some((tool) => tool.stored.sealedSecret !== undefined) ? await secretBoxKey(scope.secretsKey, "tool-secret") : undefined;
  for (const { name, source, stored } of tools) {
    const { sealedSecret, ...rest } = stored;
    const copy: StoredToolDefinition = { ...rest, fromAgent: true, tenantTool: source };
    if (sealedSecret !== undefined && toolKey) {
      const secret = await openStoredSecret(toolKey, sealedSecret, tenantToolSecretContext(scope.tenantId, source.name), { tenantTool: source.name });
      copy.sealedSecret = await sealSecret(toolKey, secret, toolSecretContext(scope.sessionId, name));
    }
    copies.tools[name] = copy;
  }
  const serverKey = servers.some((server) => server.stored.sealedHeaders !== undefined) ? await secretBoxKey(scope.secretsKey, "mcp-credential") : undefined;
  for (const { name, source, stored } of servers) {
    const { sealedHeaders, ...rest } = stored;
    const copy: StoredMcpServer = { ...rest, tenantServer: source };
    if (sealedHeaders !== undefined && serverKey) {
      const headers = await openStoredSecret(serverKey, sealedHeaders, tenantMcpCredentialContext(scope.tenantId, source.name), { tenantMcpServer: source.name });
      copy.sealedHeaders = await sealSecret(serverKey, headers, mcpCredentialContext(scope.sessionId, name));
    }
    copies.mcpServers[name] = copy;
  }
  return copies;
}

/** A pinned revision: revisions are never removed (a deleted name keeps them), so one missing is a bug. */
function pinned<T>(store: TenantRevisions<T>, source: TenantSource): T {
  const stored = store.revision(source.name, source.revision);
  if (stored === undefined) throw new Error(`The pinned revision ${source.revision} of ${source.name} is missing`);
  return stored;
}

import type { AgentDefinition, PinnedAgentDefinition, PinnedAgentTool } from "../../schema/agents.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import { tenantMcpStore, tenantToolStore } from "./tenant-revisions.ts";

// An agent version pins the revision current when it is made of every tenant tool and MCP server
// it names (spec/API.md "Agents"). Pinning runs inside the tenant object's writing turn, with the
// version's write: the revisions read are the ones stored, whatever PUT comes next.

/**
 * `definition` with each tenant tool and MCP server at its latest revision. Refused (422
 * UnknownTool, nothing written) when one does not exist, or when `activeTools` names a tool that
 * is neither one of the agent's tools nor one of its MCP servers' (as the pinned revisions list them).
 */
export function pinDefinition(sql: SqlStorage, definition: AgentDefinition): PinnedAgentDefinition {
  const { tools, mcpServers, ...rest } = definition;
  const toolStore = tenantToolStore(sql);
  const serverStore = tenantMcpStore(sql);
  const pinnedTools: [string, PinnedAgentTool][] = [];
  const missingTools: string[] = [];
  for (const [name, tool] of Object.entries(tools ?? {})) {
    if (tool.kind !== "tenant") {
      pinnedTools.push([name, tool]);
      continue;
    }
    const latest = toolStore.latest(tool.tool);
    if (latest) pinnedTools.push([name, { ...tool, revision: latest.revision }]);
    else missingTools.push(tool.tool);
  }
  if (missingTools.length > 0) {
    throw new RpcError({ code: "UnknownTool", message: `tools names tenant tools that do not exist: ${missingTools.join(", ")} (PUT /v1/tools/{name} defines one)`, details: { tools: missingTools } });
  }
  const servers = (mcpServers ?? []).flatMap((name) => {
    const latest = serverStore.latest(name);
    return latest ? [{ name, latest }] : [];
  });
  const missingServers = (mcpServers ?? []).filter((name) => !servers.some((server) => server.name === name));
  if (missingServers.length > 0) {
    throw new RpcError({ code: "UnknownTool", message: `mcpServers names tenant MCP servers that do not exist: ${missingServers.join(", ")} (PUT /v1/mcp-servers/{name} registers one)`, details: { mcpServers: missingServers } });
  }
  const offered = new Set([...pinnedTools.map(([name]) => name), ...servers.flatMap(({ latest }) => latest.value.tools.map((tool) => latest.value.prefix + tool.name))]);
  const unknown = [...new Set((definition.activeTools ?? []).filter((name) => !offered.has(name)))];
  if (unknown.length > 0) {
    throw new RpcError({
      code: "UnknownTool",
      message: `activeTools names tools this agent does not define: ${unknown.join(", ")} (define a builtin tool as { "kind": "builtin" } in tools; an MCP tool is its server's prefix and its name)`,
      details: { tools: unknown },
    });
  }
  return {
    ...rest,
    ...(tools !== undefined && { tools: Object.fromEntries(pinnedTools) }),
    ...(mcpServers !== undefined && { mcpServers: servers.map(({ name, latest }) => ({ name, revision: latest.revision })) }),
  };
}

/**
 * Records what the agent's latest version names (none once it is deleted), in the turn that makes
 * or deletes the version: a tenant tool or MCP server named here is in use (DELETE is 409 ToolInUse).
 */
export function recordTenantRefs(sql: SqlStorage, agentId: string, latest: PinnedAgentDefinition | undefined): void {
  sql.exec("DELETE FROM agent_tenant_refs WHERE agent_id = ?", agentId);
  if (!latest) return;
  const toolNames = new Set(Object.values(latest.tools ?? {}).flatMap((tool) => (tool.kind === "tenant" ? [tool.tool] : [])));
  for (const name of toolNames) sql.exec("INSERT INTO agent_tenant_refs (kind, name, agent_id) VALUES ('tool', ?, ?)", name, agentId);
  for (const server of latest.mcpServers ?? []) sql.exec("INSERT INTO agent_tenant_refs (kind, name, agent_id) VALUES ('mcp', ?, ?)", server.name, agentId);
}

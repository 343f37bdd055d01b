import { value, type Value } from "../harness/session/addresses.ts";
import type { Session } from "../harness/session/session.ts";
import type { JsonObject } from "../schema/json.ts";
import { DEFAULT_MCP_TIMEOUT_MS, type McpReplay, type McpServerInput, type McpServerSummary, type McpServerView, type McpToolView } from "../schema/mcp.ts";
import type { ToolDefinitionView } from "../schema/tools.ts";
import { toolDefinitionsPrefix } from "./definitions.ts";

// MCP servers are session data like the other tool definitions (ARCHITECTURE D11): one
// `pi.mcp/{name}` value each, holding what the tenant registered and the last tool list the server
// answered. Runs read only this cache, so a run never waits on (or fails with) discovery. Static
// headers (a bearer token among them) are stored sealed (secrets/secret-box.ts), never in plain text.

/** A tool as discovery cached it: its name on the server, what the model is told, and its arguments' schema. */
export interface CachedMcpTool {
  name: string;
  description: string;
  parameters: JsonObject;
  /** The server stopped listing it while a lane had it active: kept so the lane's runs do not fail, its calls answer an error. */
  withdrawn?: true;
}

export interface StoredMcpServer {
  url: string;
  prefix: string;
  allow?: string[];
  replay: McpReplay;
  timeoutMs: number;
  headerNames: string[];
  /** The static headers as JSON, sealed for purpose "mcp-credential" and bound to `mcpCredentialContext`. */
  sealedHeaders?: string;
  /** Changes with every PUT: a discovery started before a replacement must not overwrite its result. */
  revision: string;
  tools: CachedMcpTool[];
  skippedTools: { name: string; reason: string }[];
  /** Unix ms of the last successful discovery. */
  refreshedAt?: number;
  lastError?: { message: string; at: number };
  /** A copy of a tenant MCP server's pinned revision (tools/tenant-copies.ts). */
  tenantServer?: { name: string; revision: number };
}

export const mcpServer = (name: string): Value<StoredMcpServer> => value("pi.mcp", name);

/**
 * A registration as it is stored before its first discovery (a session's or a tenant's): defaults
 * applied, the bearer token folded into the headers, and the headers sealed by `seal` (bound to
 * whoever stores them), never kept in plain text.
 */
export async function mcpServerCandidate(name: string, input: McpServerInput, seal: (headers: Record<string, string>) => Promise<string>): Promise<StoredMcpServer> {
  const headers = { ...input.headers, ...(input.bearerToken !== undefined && { Authorization: `Bearer ${input.bearerToken}` }) };
  return {
    url: input.url,
    prefix: input.prefix ?? `${name}_`,
    ...(input.allow !== undefined && { allow: input.allow }),
    replay: input.replay ?? "never",
    timeoutMs: input.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS,
    headerNames: Object.keys(headers),
    ...(Object.keys(headers).length > 0 && { sealedHeaders: await seal(headers) }),
    revision: crypto.randomUUID(),
    tools: [],
    skippedTools: [],
  };
}
/** Only for `scanValues`: every server. */
export const mcpServersPrefix = (): Value<StoredMcpServer> => value("pi.mcp", "");

/** Where a server's sealed headers live: a seal copied to another session or server fails to open. */
export function mcpCredentialContext(sessionId: string, name: string): string {
  return `session:${sessionId}/mcp:${name}`;
}

export function replayOf(server: Pick<StoredMcpServer, "replay">, remoteName: string): "never" | "safe" {
  // Own names only: a tool called `toString` or `constructor` is not in the map either.
  if (typeof server.replay === "string") return server.replay;
  return Object.hasOwn(server.replay, remoteName) ? (server.replay[remoteName] ?? "never") : "never";
}

/** One MCP tool as the session offers it under its own name. */
export interface McpToolBinding {
  serverName: string;
  server: StoredMcpServer;
  tool: CachedMcpTool;
}

/**
 * Every MCP tool the session offers, by its name in the session. A name a session tool defines
 * stays that tool's, and between servers the one whose name sorts first keeps it: the same
 * answer wherever it is asked, whatever order things were registered in.
 */
export function mcpToolIndex(session: Pick<Session, "scanValues">): Map<string, McpToolBinding> {
  const taken = new Set(session.scanValues(toolDefinitionsPrefix()).map((stored) => stored.address.key));
  const index = new Map<string, McpToolBinding>();
  const servers = session.scanValues(mcpServersPrefix()).sort((a, b) => (a.address.key < b.address.key ? -1 : 1));
  for (const { address, value: server } of servers) {
    for (const tool of server.tools) {
      const name = server.prefix + tool.name;
      if (taken.has(name) || index.has(name)) continue;
      index.set(name, { serverName: address.key, server, tool });
    }
  }
  return index;
}

/** The session names of `serverName`'s tools that another tool or an earlier server already holds. */
function shadowedNames(serverName: string, server: StoredMcpServer, index: Map<string, McpToolBinding>): Set<string> {
  return new Set(server.tools.map((tool) => server.prefix + tool.name).filter((name) => index.get(name)?.serverName !== serverName));
}

export function mcpServerView(name: string, server: StoredMcpServer, index: Map<string, McpToolBinding>): McpServerView {
  const shadowed = shadowedNames(name, server, index);
  const tools: McpToolView[] = server.tools
    .filter((tool) => !shadowed.has(server.prefix + tool.name))
    .map((tool) => ({ name: server.prefix + tool.name, remoteName: tool.name, replay: replayOf(server, tool.name), ...(tool.withdrawn && { withdrawn: true as const }) }));
  const skippedTools = [
    ...server.skippedTools,
    ...[...shadowed].map((toolName) => ({ name: toolName.slice(server.prefix.length), reason: `the name ${toolName} is already taken in this session` })),
  ];
  return {
    name,
    url: server.url,
    prefix: server.prefix,
    ...(server.allow !== undefined && { allow: server.allow }),
    replay: server.replay,
    timeoutMs: server.timeoutMs,
    headerNames: server.headerNames,
    ...summaryFields(server),
    toolCount: tools.length,
    tools,
    skippedTools,
  };
}

/** An MCP tool in `GET …/tools`, beside the session's own definitions. */
export function mcpToolView(name: string, binding: McpToolBinding): ToolDefinitionView {
  return { name, kind: "mcp", description: binding.tool.description, parameters: binding.tool.parameters, replay: replayOf(binding.server, binding.tool.name), server: binding.serverName };
}

export function mcpServerSummary(name: string, server: StoredMcpServer, index: Map<string, McpToolBinding>): McpServerSummary {
  return { name, ...summaryFields(server), toolCount: [...index.values()].filter((binding) => binding.serverName === name).length };
}

function summaryFields(server: StoredMcpServer): Pick<McpServerSummary, "status" | "lastRefreshAt" | "lastError"> {
  return {
    status: server.lastError !== undefined ? "error" : "ready",
    ...(server.refreshedAt !== undefined && { lastRefreshAt: new Date(server.refreshedAt).toISOString() }),
    ...(server.lastError !== undefined && { lastError: { message: server.lastError.message, at: new Date(server.lastError.at).toISOString() } }),
  };
}

import type { ClientTool, ResolvedTool, ToolDeclaration, ToolsPort } from "../harness/execution/tools.ts";
import { isReservedNamespace, value } from "../harness/session/addresses.ts";
import type { Session } from "../harness/session/session.ts";
import type { JsonValue } from "../schema/json.ts";
import { MCP_DISCOVERY_RETRY_MS, MCP_DISCOVERY_TTL_MS } from "../schema/mcp.ts";
import { builtinTool, type BuiltinDependencies } from "./builtin/index.ts";
import { callContextOf, type CallContextOf } from "./call-context.ts";
import type { ApplicationValues } from "./builtin/values.ts";
import { toolDefinition, toolDefinitionsPrefix, type StoredToolDefinition } from "./definitions.ts";
import { httpTool, type HttpToolSettings } from "./http-tool.ts";
import type { McpSettings } from "./mcp-connection.ts";
import { mcpToolIndex, type StoredMcpServer } from "./mcp-definitions.ts";
import { mcpTool } from "./mcp-tool.ts";

export interface ToolRegistryOptions {
  session: Session;
  clock?: () => number;
  /** How http and MCP tools reach the outside world; without it they resolve to nothing. */
  remote?: RemoteTools;
}

/** What tools that call out need: whose calls they are, and how they reach endpoints and servers. */
export interface RemoteTools {
  /** The session's tenant, named in every call's context (call-context.ts). */
  tenantId: string;
  http: HttpToolSettings;
  mcp: McpToolSettings;
}

export interface McpToolSettings extends McpSettings {
  /** Told when a run resolves a tool of a server whose cached tool list is past its TTL (a hint to refresh it in the background). */
  onStaleServer?(serverName: string): void;
}

/**
 * The Tools port of a hosted session (ARCHITECTURE D11): each name resolves, when asked, from the
 * session's own `pi.tools/{name}` definition to an implementation by kind. Reading on every
 * resolution keeps a run in step with definition changes without any cache to invalidate.
 */
export function createToolRegistry(options: ToolRegistryOptions): ToolsPort {
  const { session } = options;
  const dependencies: BuiltinDependencies = { clock: options.clock ?? Date.now, values: applicationValues(session) };
  const { remote } = options;
  const context = remote && callContextOf(session, remote.tenantId);
  return {
    resolve(name: string): ResolvedTool | undefined {
      const stored = session.getValue(toolDefinition(name))?.value;
      if (!stored) return remote && context ? resolveMcp(session, name, remote.mcp, context, dependencies.clock) : undefined;
      switch (stored.kind) {
        case "builtin":
          return builtinTool(name, stored.description, dependencies);
        case "client":
          return clientTool(name, stored);
        case "http":
          return remote && context ? httpTool(session.metadata.id, name, stored, remote.http, context) : undefined;
      }
    },
  };
}

/** An MCP tool from the session's cached tool lists (never from the server itself: a run does not wait on discovery). */
function resolveMcp(session: Session, name: string, settings: McpToolSettings, context: CallContextOf, clock: () => number): ResolvedTool | undefined {
  const binding = mcpToolIndex(session).get(name);
  if (!binding) return undefined;
  if (discoveryDue(binding.server, clock())) settings.onStaleServer?.(binding.serverName);
  return mcpTool(session.metadata.id, name, binding, settings, context);
}

/**
 * Whether a server's cached list is past its TTL. A failed discovery is not retried before
 * MCP_DISCOVERY_RETRY_MS, or a server that is down would be asked again on every resolution of a run.
 */
function discoveryDue(server: StoredMcpServer, now: number): boolean {
  if (now - (server.refreshedAt ?? 0) <= MCP_DISCOVERY_TTL_MS) return false;
  return server.lastError === undefined || now - server.lastError.at > MCP_DISCOVERY_RETRY_MS;
}

/** The names of every tool the session offers: its own definitions and its MCP servers' tools (what a lane may activate). */
export function definedToolNames(session: Pick<Session, "scanValues">): Set<string> {
  return new Set([...session.scanValues(toolDefinitionsPrefix()).map((stored) => stored.address.key), ...mcpToolIndex(session).keys()]);
}

/** Only the session's own definitions (bounded by MAX_SESSION_TOOLS; MCP tools are bounded per server). */
export function ownToolNames(session: Pick<Session, "scanValues">): Set<string> {
  return new Set(session.scanValues(toolDefinitionsPrefix()).map((stored) => stored.address.key));
}

export function declarationOf(name: string, stored: StoredToolDefinition): ToolDeclaration {
  return { name, kind: stored.kind, description: stored.description, parameters: stored.parameters, replay: stored.replay };
}

function clientTool(name: string, stored: StoredToolDefinition): ClientTool {
  return { kind: "client", declaration: declarationOf(name, stored), ...(stored.timeoutMs !== undefined && { timeoutMs: stored.timeoutMs }) };
}

class ReservedNamespace extends Error {
  override readonly name = "ReservedNamespace";
  constructor(namespace: string) {
    super(`The namespace ${namespace} belongs to the runtime; use your own`);
  }
}

function applicationValues(session: Session): ApplicationValues {
  const checked = (namespace: string): string => {
    if (isReservedNamespace(namespace)) throw new ReservedNamespace(namespace);
    return namespace;
  };
  return {
    get: (namespace, key) => session.getValue(value<JsonValue>(checked(namespace), key))?.value,
    set: async (namespace, key, next) => {
      await session.setValue(value<JsonValue>(checked(namespace), key), next);
    },
    // Only the values listed are read: a namespace of any size costs a listing its limit at most.
    list: (namespace, prefix, limit) => session.scanValues(value<JsonValue>(checked(namespace), prefix), limit).map((stored) => ({ key: stored.address.key, value: stored.value })),
  };
}

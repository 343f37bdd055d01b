import type { AgentHarness } from "../../harness/runtime/harness.ts";
import { egressDetails, egressProblem } from "../../schema/egress-policy.ts";
import type { RpcResult } from "../../schema/errors.ts";
import { MAX_SESSION_MCP_SERVERS, type McpServerInput, type McpServerReply, type McpServerView } from "../../schema/mcp.ts";
import type { Wire } from "../../schema/wire.ts";
import { sealSecret, secretBoxKey } from "../../secrets/secret-box.ts";
import { carriedTools, withDiscovery, type DiscoveryOutcome } from "../../tools/mcp-cache.ts";
import type { McpSettings } from "../../tools/mcp-connection.ts";
import { McpExchangeError } from "../../tools/mcp-connection.ts";
import { mcpCredentialContext, mcpServer, mcpServerCandidate, mcpServersPrefix, mcpServerView, mcpToolIndex, type StoredMcpServer } from "../../tools/mcp-definitions.ts";
import { discoverMcpTools } from "../../tools/mcp-discovery.ts";
import { asResult, invalidInput, parseWire, RpcError } from "../rpc/rpc-errors.ts";

import type { SessionHost } from "./session-host.ts";
/** What this module reaches of the host (session-host.ts). */
type McpHost = Pick<SessionHost, "env" | "harness" | "session">;

/**
 * MCP servers of a session (spec/API.md `…/mcp-servers/{name}`, the mcp kind of ARCHITECTURE
 * D11): registered, listed, refreshed, removed. Discovery is network I/O, so it runs before the
 * synchronous turn that reads the stored server and writes the outcome: no other request can slip
 * between that read and that write (reference §5), and a discovery that a newer registration
 * overtook (another revision) is dropped instead of overwriting it.
 */
export class SessionMcp {
  /** Servers being refreshed in the background (one at a time each). */
  private readonly refreshing = new Set<string>();

  constructor(private readonly host: McpHost) {}

  async listMcpServers(): Promise<Wire<RpcResult<McpServerView[]>>> {
    return asResult(() => {
      const session = this.host.session();
      const index = mcpToolIndex(session);
      return session.scanValues(mcpServersPrefix()).map((stored) => mcpServerView(stored.address.key, stored.value, index));
    });
  }

  async putMcpServer(name: string, input: Wire<McpServerInput>): Promise<Wire<RpcResult<McpServerReply>>> {
    return asResult(async () => {
      const definition = parseWire(input);
      const session = this.host.session();
      const harness = await this.host.harness();
      const urlProblem = egressProblem(definition.url, this.mcpSettings().allowLoopback);
      if (urlProblem) throw invalidInput("url", urlProblem.message, { field: "url", server: name, ...egressDetails(urlProblem) });
      const prefix = definition.prefix ?? `${name}_`;
      this.checkServerBound(name);
      this.checkPrefixChange(harness, name, prefix);
      const candidate = await mcpServerCandidate(name, definition, (headers) => this.sealHeaders(name, headers));
      const outcome = await this.discover(name, candidate);
      // From here on one synchronous turn: the bound and the previous registration are read again.
      this.checkServerBound(name);
      this.checkPrefixChange(harness, name, prefix);
      const replaced = session.getValue(mcpServer(name))?.value;
      // Under the same names the cached tools carry over (those the new `allow` admits): kept
      // should this discovery have failed, and those it no longer lists stay withdrawn while a lane
      // has them active.
      const active = activeToolNames(harness);
      const stored = withDiscovery({ ...candidate, tools: carriedTools(replaced, candidate, active) }, outcome, active, Date.now());
      await session.setValue(mcpServer(name), stored);
      return { ...mcpServerView(name, stored, mcpToolIndex(session)), created: !replaced };
    });
  }

  async deleteMcpServer(name: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(async () => {
      const harness = await this.host.harness();
      const session = this.host.session();
      const stored = session.getValue(mcpServer(name))?.value;
      if (!stored) throw notFound(name);
      const offered = new Set([...mcpToolIndex(session)].filter(([, binding]) => binding.serverName === name).map(([toolName]) => toolName));
      const lanes = harness.lanes().filter((lane) => harness.getLane(lane.name)?.state.configuration.activeToolNames.some((toolName) => offered.has(toolName))).map((lane) => lane.name);
      if (lanes.length > 0) {
        throw new RpcError({ code: "ToolInUse", message: `Tools of the MCP server ${name} are active on lanes ${lanes.join(", ")}; remove them from their activeTools first`, details: { lanes } });
      }
      await session.deleteValue(mcpServer(name));
      return { deleted: true as const };
    });
  }

  async refreshMcpServer(name: string): Promise<Wire<RpcResult<McpServerView>>> {
    return asResult(async () => {
      const refreshed = await this.refresh(name);
      if (!refreshed) throw notFound(name);
      return mcpServerView(name, refreshed, mcpToolIndex(this.host.session()));
    });
  }

  /** A run used the tools of this server past its cached tool list's TTL: refreshed in the background, one at a time. */
  refreshInBackground(name: string): void {
    if (this.refreshing.has(name)) return;
    this.refreshing.add(name);
    void this.refresh(name)
      .catch(() => undefined)
      .finally(() => this.refreshing.delete(name));
  }

  /** Discovers the server's tools again and stores the outcome; undefined when there is no such server. */
  private async refresh(name: string): Promise<StoredMcpServer | undefined> {
    const session = this.host.session();
    const harness = await this.host.harness();
    const read = session.getValue(mcpServer(name))?.value;
    if (!read) return undefined;
    const outcome = await this.discover(name, read);
    const current = session.getValue(mcpServer(name))?.value;
    // Removed or registered anew meanwhile: that registration's own discovery stands.
    if (!current || current.revision !== read.revision) return current;
    const stored = withDiscovery(current, outcome, activeToolNames(harness), Date.now());
    await session.setValue(mcpServer(name), stored);
    return stored;
  }

  private async discover(name: string, server: StoredMcpServer): Promise<DiscoveryOutcome> {
    try {
      const discovery = await discoverMcpTools({ sessionId: this.host.session().metadata.id, serverName: name, server }, this.mcpSettings(), new AbortController().signal);
      return { ok: true, discovery };
    } catch (error) {
      if (error instanceof McpExchangeError) return { ok: false, message: error.message };
      throw error;
    }
  }

  /** A new prefix renames every tool of the server: refused while a lane has one under the old name active. */
  private checkPrefixChange(harness: AgentHarness, name: string, prefix: string): void {
    const replaced = this.host.session().getValue(mcpServer(name))?.value;
    if (!replaced || replaced.prefix === prefix) return;
    const active = activeToolNames(harness);
    const inUse = replaced.tools.map((tool) => replaced.prefix + tool.name).filter((toolName) => active.has(toolName));
    if (inUse.length > 0) {
      throw new RpcError({ code: "ToolInUse", message: `A new prefix would rename ${inUse.join(", ")}, active on a lane; remove them from its activeTools first`, details: { tools: inUse } });
    }
  }

  private checkServerBound(name: string): void {
    const session = this.host.session();
    if (session.getValue(mcpServer(name))) return;
    if (session.scanValues(mcpServersPrefix()).length >= MAX_SESSION_MCP_SERVERS) {
      throw new RpcError({ code: "LimitExceeded", message: `A session may register at most ${MAX_SESSION_MCP_SERVERS} MCP servers`, details: { resource: "mcpServers", limit: MAX_SESSION_MCP_SERVERS } });
    }
  }

  private async sealHeaders(name: string, headers: Record<string, string>): Promise<string> {
    const key = await secretBoxKey(this.host.env.SECRETS_KEY, "mcp-credential");
    return sealSecret(key, JSON.stringify(headers), mcpCredentialContext(this.host.session().metadata.id, name));
  }

  private mcpSettings(): McpSettings {
    return { secretsKey: this.host.env.SECRETS_KEY, allowLoopback: this.host.env.LOCAL_DEV === "on" };
  }
}

function notFound(name: string): RpcError {
  return new RpcError({ code: "McpServerNotFound", message: `MCP server ${name} is not registered` });
}

/** Every tool name some lane of the session has active. */
function activeToolNames(harness: AgentHarness): Set<string> {
  return new Set(harness.lanes().flatMap((lane) => harness.getLane(lane.name)?.state.configuration.activeToolNames ?? []));
}

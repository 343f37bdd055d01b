import { egressDetails, egressProblem } from "../../schema/egress-policy.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { McpServerInput } from "../../schema/mcp.ts";
import type { TenantMcpServerReply, TenantMcpServerView } from "../../schema/tenant-tools.ts";
import type { Wire } from "../../schema/wire.ts";
import { sealSecret, secretBoxKey } from "../../secrets/secret-box.ts";
import { carriedTools, withDiscovery, type DiscoveryOutcome } from "../../tools/mcp-cache.ts";
import { McpExchangeError } from "../../tools/mcp-connection.ts";
import { mcpServerCandidate, mcpServerView, type McpToolBinding, type StoredMcpServer } from "../../tools/mcp-definitions.ts";
import { discoverMcpTools } from "../../tools/mcp-discovery.ts";
import { tenantMcpCredentialContext } from "../../tools/tenant-copies.ts";
import { asResult, invalidInput, parseWire } from "../rpc/rpc-errors.ts";
import type { TenantHost } from "./tenant-host.ts";
import { tenantMcpStore, type Revision, type TenantRevisions } from "./tenant-revisions.ts";
import type { Page } from "./time-cursor.ts";

/** What this module reaches of the host (tenant-host.ts). */
type TenantMcpHost = Pick<TenantHost, "sql" | "env" | "requireTenant" | "requireActiveTenant" | "assertStorageRoom">;

/** No lane of the tenant has a tool active: a tool the server stops listing leaves the next revision (sessions keep theirs). */
const NO_ACTIVE_TOOLS: ReadonlySet<string> = new Set();

/**
 * The tenant's own MCP servers (spec/API.md "Tenant tools and MCP servers"), registered once for
 * every session made from the tenant's agents. As for a session's (session-mcp.ts), discovery is
 * network I/O and runs before the synchronous turn that reads the latest revision and writes the
 * next. A revision is what an agent version pins, so its tool list never changes: a PUT, or a
 * refresh that finds another tool list, makes a new revision; a refresh that finds the same list
 * only restates when discovery last ran (or why it failed) on the latest one.
 */
export class TenantMcpServers {
  constructor(private readonly host: TenantMcpHost) {}

  async listTenantMcpServers(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<TenantMcpServerView>>>> {
    return asResult(() => {
      this.host.requireTenant();
      const page = this.store().list(limit, cursor);
      return { items: page.items.map(tenantMcpServerView), nextCursor: page.nextCursor };
    });
  }

  async getTenantMcpServer(name: string): Promise<Wire<RpcResult<TenantMcpServerView>>> {
    return asResult(() => {
      this.host.requireTenant();
      return tenantMcpServerView(this.store().require(name));
    });
  }

  async putTenantMcpServer(name: string, input: Wire<McpServerInput>): Promise<Wire<RpcResult<TenantMcpServerReply>>> {
    return asResult(async () => {
      const tenant = this.host.requireActiveTenant();
      // Refused before the server is contacted, and again in the writing turn.
      this.host.assertStorageRoom();
      const definition = parseWire(input);
      const urlProblem = egressProblem(definition.url, this.allowLoopback());
      if (urlProblem) throw invalidInput("url", urlProblem.message, { field: "url", server: name, ...egressDetails(urlProblem) });
      const store = this.store();
      // Refused before contacting the server (and again in the writing turn).
      if (!store.latest(name)) store.assertRoom(!store.existed(name));
      const candidate = await mcpServerCandidate(name, definition, (headers) => this.sealHeaders(tenant.id, name, headers));
      const outcome = await this.discover(tenant.id, name, candidate);
      // From here on one synchronous turn (a deletion begun during the discovery refuses it). Under
      // the same prefix the cached tools the new `allow` admits carry over, kept should this
      // discovery have failed.
      this.host.requireActiveTenant();
      this.host.assertStorageRoom();
      const { stored, created } = store.put(name, (latest) => withDiscovery({ ...candidate, tools: carriedTools(latest, candidate, NO_ACTIVE_TOOLS) }, outcome, NO_ACTIVE_TOOLS, Date.now()), Date.now());
      return { ...tenantMcpServerView(stored), created };
    });
  }

  async deleteTenantMcpServer(name: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(() => {
      this.host.requireTenant();
      this.store().delete(name, Date.now());
      return { deleted: true as const };
    });
  }

  /** Discovers the tools again now; a failure keeps the cached tools and is in `lastError`. */
  async refreshTenantMcpServer(name: string): Promise<Wire<RpcResult<TenantMcpServerView>>> {
    return asResult(async () => {
      const tenant = this.host.requireActiveTenant();
      const read = this.store().require(name);
      const outcome = await this.discover(tenant.id, name, read.value);
      // One synchronous turn from here (a deletion begun during the discovery refuses it): removed
      // or registered anew meanwhile, that registration stands.
      this.host.requireActiveTenant();
      const store = this.store();
      const current = store.require(name);
      if (current.revision !== read.revision) return tenantMcpServerView(current);
      const next = withDiscovery(current.value, outcome, NO_ACTIVE_TOOLS, Date.now());
      if (sameTools(current.value, next) && store.restate(name, current.revision, next)) return tenantMcpServerView({ ...current, value: next });
      // Another tool list is a new revision, refused as a PUT's is past the storage budget; restating
      // the status above is not growth, so a full tenant still learns whether its server answers.
      this.host.assertStorageRoom();
      return tenantMcpServerView(store.put(name, () => next, Date.now()).stored);
    });
  }

  private async discover(tenantId: string, name: string, server: StoredMcpServer): Promise<DiscoveryOutcome> {
    try {
      const target = { sessionId: "", serverName: name, server, credentialContext: tenantMcpCredentialContext(tenantId, name) };
      const discovery = await discoverMcpTools(target, { secretsKey: this.host.env.SECRETS_KEY, allowLoopback: this.allowLoopback() }, new AbortController().signal);
      return { ok: true, discovery };
    } catch (error) {
      if (error instanceof McpExchangeError) return { ok: false, message: error.message };
      throw error;
    }
  }

  private async sealHeaders(tenantId: string, name: string, headers: Record<string, string>): Promise<string> {
    const key = await secretBoxKey(this.host.env.SECRETS_KEY, "mcp-credential");
    return sealSecret(key, JSON.stringify(headers), tenantMcpCredentialContext(tenantId, name));
  }

  private allowLoopback(): boolean {
    return this.host.env.LOCAL_DEV === "on";
  }

  private store(): TenantRevisions<StoredMcpServer> {
    return tenantMcpStore(this.host.sql);
  }
}

/** Whether a discovery left what a session may call as it was (only the status fields differ). */
function sameTools(before: StoredMcpServer, after: StoredMcpServer): boolean {
  return JSON.stringify([before.tools, before.skippedTools]) === JSON.stringify([after.tools, after.skippedTools]);
}

function tenantMcpServerView(stored: Revision<StoredMcpServer>): TenantMcpServerView {
  // The server alone offers its tools: no session tool or other server shadows one here.
  const index = new Map<string, McpToolBinding>(stored.value.tools.map((tool) => [stored.value.prefix + tool.name, { serverName: stored.name, server: stored.value, tool }]));
  return { ...mcpServerView(stored.name, stored.value, index), revision: stored.revision, createdAt: stored.createdAt, updatedAt: stored.updatedAt };
}

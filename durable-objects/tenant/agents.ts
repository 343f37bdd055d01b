import type { Agent, AgentDefinition } from "../../schema/agents.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, parseWire } from "../rpc/rpc-errors.ts";
import type { AgentForSession, TenantCopies } from "../../tools/tenant-copies.ts";
import { tenantCopies } from "./agent-copies.ts";
import { AgentStore, type AppendResult } from "./agent-store.ts";
import type { TenantHost } from "./tenant-host.ts";
import type { Page } from "./time-cursor.ts";

/** What this module reaches of the host (tenant-host.ts). */
type AgentsHost = Pick<TenantHost, "sql" | "env" | "requireTenant" | "requireActiveTenant" | "assertStorageRoom">;

/**
 * The tenant's agents (agent-store.ts): versioned definitions a session can be created from. The
 * front worker validated each definition (its shape, its model, its tools) before it gets here;
 * this module keeps the bounds, the versions (pinning the tenant tools and MCP servers they name:
 * agent-pins.ts) and the deletions, each call one SQL turn.
 */
export class Agents {
  constructor(private readonly host: AgentsHost) {}

  async createAgent(agentId: string, definition: Wire<AgentDefinition>): Promise<Wire<RpcResult<Agent>>> {
    return asResult(() => {
      this.host.requireActiveTenant();
      this.host.assertStorageRoom();
      return this.store().create(agentId, parseWire(definition), Date.now());
    });
  }

  async listAgents(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<Agent>>>> {
    return asResult(() => {
      this.host.requireTenant();
      return this.store().list(limit, cursor);
    });
  }

  async getAgent(agentId: string): Promise<Wire<RpcResult<Agent>>> {
    return asResult(() => {
      this.host.requireTenant();
      return this.store().latest(agentId);
    });
  }

  async listAgentVersions(agentId: string, limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<Agent>>>> {
    return asResult(() => {
      this.host.requireTenant();
      return this.store().versions(agentId, limit, cursor);
    });
  }

  async getAgentVersion(agentId: string, version: number): Promise<Wire<RpcResult<Agent>>> {
    return asResult(() => {
      this.host.requireTenant();
      return this.store().version(agentId, version);
    });
  }

  /** The version after `basedOn`, or the conflict when another came first (the caller merges again). */
  async appendAgentVersion(agentId: string, basedOn: number, definition: Wire<AgentDefinition>): Promise<Wire<RpcResult<AppendResult>>> {
    return asResult(() => {
      this.host.requireActiveTenant();
      this.host.assertStorageRoom();
      return this.store().append(agentId, basedOn, parseWire(definition), Date.now());
    });
  }

  async deleteAgent(agentId: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(() => {
      this.host.requireTenant();
      this.store().delete(agentId, Date.now());
      return { deleted: true as const };
    });
  }

  /**
   * What a session created from (or moved to) an agent version copies, in one answer: the version
   * (the latest when `version` is undefined) and sealed copies, for `sessionId` only, of the tenant
   * tools and MCP servers it pinned. A deleted agent serves no new binding (AgentNotFound); the
   * sessions already bound to one keep their copies.
   */
  async agentForSession(agentId: string, version: number | undefined, sessionId: string): Promise<Wire<RpcResult<AgentForSession>>> {
    return asResult(async () => {
      const tenant = this.host.requireTenant();
      const store = this.store();
      const latest = store.latest(agentId);
      const agent = version === undefined || version === latest.version ? latest : store.version(agentId, version);
      return { agent, copies: await this.copiesFor(tenant.id, agent, sessionId) };
    });
  }

  /**
   * Sealed copies of the tenant tools and MCP servers `agent` pins, for `sessionId` only. Only
   * reads: the revisions are read in one turn, then sealed (the awaits guard no write).
   */
  private copiesFor(tenantId: string, agent: Agent, sessionId: string): Promise<TenantCopies> {
    return tenantCopies(this.host.sql, agent, { tenantId, sessionId, secretsKey: this.host.env.SECRETS_KEY });
  }

  private store(): AgentStore {
    return new AgentStore(this.host.sql);
  }
}

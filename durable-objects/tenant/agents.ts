import type { Agent, AgentDefinition } from "../../schema/agents.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, parseWire } from "../rpc/rpc-errors.ts";
import { AgentStore, type AppendResult } from "./agent-store.ts";
import type { TenantHost } from "./tenant-host.ts";
import type { Page } from "./time-cursor.ts";

/** What this module reaches of the host (tenant-host.ts). */
type AgentsHost = Pick<TenantHost, "sql" | "requireTenant">;

/**
 * The tenant's agents (agent-store.ts): versioned definitions a session can be created from. The
 * front worker validated each definition (its shape, its model, its tools) before it gets here;
 * this module keeps the bounds, the versions and the deletions, each call one SQL turn.
 */
export class Agents {
  constructor(private readonly host: AgentsHost) {}

  async createAgent(agentId: string, definition: Wire<AgentDefinition>): Promise<Wire<RpcResult<Agent>>> {
    return asResult(() => {
      this.host.requireTenant();
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
      this.host.requireTenant();
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

  private store(): AgentStore {
    return new AgentStore(this.host.sql);
  }
}

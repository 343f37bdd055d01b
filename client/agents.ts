import type { Agent, AgentDefinition, CreateAgent, PatchAgent } from "../schema/agents.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { paginate } from "./paging.ts";
import type { Page, PageQuery } from "./types.ts";

export type { Agent, AgentDefinition, CreateAgent, PatchAgent };

/**
 * The tenant's agents (`docs/agents.md`): versioned definitions (model, thinking level, settings,
 * resources, tools, active tools, metadata). Versions are immutable; `update` makes the next one.
 */
export class AgentsApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `POST /v1/agents` → the agent's version 1 (`options.idempotencyKey` makes a retry safe). */
  create(body: CreateAgent = {}, options: CallOptions = {}): Promise<Agent> {
    return this.http.json({ ...options, method: "POST", path: "/v1/agents", body });
  }

  /** `GET /v1/agents?limit&cursor` → one page of agents (each at its latest version), in creation order. */
  list(query: PageQuery = {}, options: CallOptions = {}): Promise<Page<Agent>> {
    return this.http.json({ ...options, method: "GET", path: "/v1/agents", query: { limit: query.limit, cursor: query.cursor } });
  }

  /** Every agent (latest versions), fetching pages lazily. */
  all(query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<Agent, void, undefined> {
    return paginate((cursor) => this.list({ ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `GET /v1/agents/{id}` → the latest version (404 AgentNotFound once deleted). */
  get(id: string, options: CallOptions = {}): Promise<Agent> {
    return this.http.json({ ...options, method: "GET", path: `/v1/agents${path(id)}` });
  }

  /** `GET /v1/agents/{id}/versions?limit&cursor` → one page of its versions, oldest first (also of a deleted agent). */
  versions(id: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<Agent>> {
    return this.http.json({ ...options, method: "GET", path: `/v1/agents${path(id)}/versions`, query: { limit: query.limit, cursor: query.cursor } });
  }

  /** Every version of the agent, fetching pages lazily. */
  allVersions(id: string, query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<Agent, void, undefined> {
    return paginate((cursor) => this.versions(id, { ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `GET /v1/agents/{id}/versions/{version}` → that version. */
  version(id: string, version: number, options: CallOptions = {}): Promise<Agent> {
    return this.http.json({ ...options, method: "GET", path: `/v1/agents${path(id, "versions", version)}` });
  }

  /** `PATCH /v1/agents/{id}`: a JSON Merge Patch over the latest version (`null` removes a member) → the new version. */
  update(id: string, patch: PatchAgent, options: CallOptions = {}): Promise<Agent> {
    return this.http.json({ ...options, method: "PATCH", path: `/v1/agents${path(id)}`, body: patch });
  }

  /** `DELETE /v1/agents/{id}` → 204; its versions stay readable. 404 AgentNotFound when it is not live. */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: `/v1/agents${path(id)}` });
  }
}

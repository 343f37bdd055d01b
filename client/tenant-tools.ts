import type { McpServerInput } from "../schema/mcp.ts";
import type { TenantMcpServerReply, TenantMcpServerView, TenantToolInput, TenantToolReply, TenantToolView } from "../schema/tenant-tools.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { paginate } from "./paging.ts";
import type { Page, PageQuery } from "./types.ts";

export type { TenantMcpServerReply, TenantMcpServerView, TenantToolInput, TenantToolReply, TenantToolView };

/**
 * The tenant's own tools (`docs/tools.md` "Tenant tools"): one http or client tool definition and
 * one signing secret for every session made from the tenant's agents. Each `put` makes the next
 * revision; an agent version pins the revision current when it is made.
 */
export class TenantToolsApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `GET /v1/tools?limit&cursor` → one page of tools (each at its latest revision), in creation order. */
  list(query: PageQuery = {}, options: CallOptions = {}): Promise<Page<TenantToolView>> {
    return this.http.json({ ...options, method: "GET", path: "/v1/tools", query: { limit: query.limit, cursor: query.cursor } });
  }

  /** Every tool, fetching pages lazily. */
  all(query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<TenantToolView, void, undefined> {
    return paginate((cursor) => this.list({ ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `GET /v1/tools/{name}` → its latest revision. */
  get(name: string, options: CallOptions = {}): Promise<TenantToolView> {
    return this.http.json({ ...options, method: "GET", path: `/v1/tools${path(name)}` });
  }

  /** `PUT /v1/tools/{name}` → the new revision and `created`; the `secret` of an http tool when it was created (shown this once). */
  async put(name: string, definition: TenantToolInput, options: CallOptions = {}): Promise<TenantToolReply> {
    const response = await this.http.send<Omit<TenantToolReply, "created">>({ ...options, method: "PUT", path: `/v1/tools${path(name)}`, body: definition });
    return { ...response.body, created: response.status === 201 };
  }

  /** `DELETE /v1/tools/{name}` → 204; 409 ToolInUse while the latest version of a live agent names it. */
  async delete(name: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: `/v1/tools${path(name)}` });
  }
}

/** The tenant's own MCP servers (`docs/tools.md` "Tenant tools"), registered once for every session made from its agents. */
export class TenantMcpServersApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `GET /v1/mcp-servers?limit&cursor` → one page of servers (each at its latest revision), in creation order. */
  list(query: PageQuery = {}, options: CallOptions = {}): Promise<Page<TenantMcpServerView>> {
    return this.http.json({ ...options, method: "GET", path: "/v1/mcp-servers", query: { limit: query.limit, cursor: query.cursor } });
  }

  /** Every server, fetching pages lazily. */
  all(query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<TenantMcpServerView, void, undefined> {
    return paginate((cursor) => this.list({ ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `GET /v1/mcp-servers/{name}` → its latest revision. */
  get(name: string, options: CallOptions = {}): Promise<TenantMcpServerView> {
    return this.http.json({ ...options, method: "GET", path: `/v1/mcp-servers${path(name)}` });
  }

  /** `PUT /v1/mcp-servers/{name}` → the new revision after discovering its tools, and `created` (a failed discovery: `status`, `lastError`). */
  async put(name: string, server: McpServerInput, options: CallOptions = {}): Promise<TenantMcpServerReply> {
    const response = await this.http.send<Omit<TenantMcpServerReply, "created">>({ ...options, method: "PUT", path: `/v1/mcp-servers${path(name)}`, body: server });
    return { ...response.body, created: response.status === 201 };
  }

  /** `POST /v1/mcp-servers/{name}/refresh` → the server after discovering its tools again (a new revision when they changed). */
  refresh(name: string, options: CallOptions = {}): Promise<TenantMcpServerView> {
    return this.http.json({ ...options, method: "POST", path: `/v1/mcp-servers${path(name)}/refresh` });
  }

  /** `DELETE /v1/mcp-servers/{name}` → 204; 409 ToolInUse while the latest version of a live agent names it. */
  async delete(name: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: `/v1/mcp-servers${path(name)}` });
  }
}

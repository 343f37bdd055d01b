import type { JsonObject } from "../schema/json.ts";
import type { ModelIdentity } from "../schema/lane.ts";
import { AgentsApi } from "./agents.ts";
import { AdminApi, deleteDefaultModel, me, models, setDefaultModel } from "./admin.ts";
import { HttpClient, type CallOptions, type HttpClientOptions } from "./http.ts";
import { LanesApi, QueueApi } from "./lanes.ts";
import { McpServersApi } from "./mcp-servers.ts";
import { TenantMcpServersApi, TenantToolsApi } from "./tenant-tools.ts";
import { OperationsApi } from "./operations.ts";
import { ResourcesApi } from "./resources.ts";
import { ProvidersApi, ToolsApi } from "./tools.ts";
import { WebhooksApi } from "./webhooks.ts";
import { SchedulesApi } from "./schedules.ts";
import { BranchesApi, ListsApi, ValuesApi } from "./session-data.ts";
import { DataApi } from "./data.ts";
import { EntriesApi, SessionsApi, usage } from "./sessions.ts";
import type { Me, ModelCatalogEntry, UsagePage, UsageQuery } from "./types.ts";
import { watchLane, type LaneWatch, type WatchLaneOptions } from "./watch.ts";

export type ClientOptions = HttpClientOptions;

/**
 * The typed REST client of the API, one area per group of routes:
 *
 * ```ts
 * const client = new AgentSessionsClient({ baseUrl: "https://…", key: "sk_…" });
 * const session = await client.sessions.create({ name: "demo" });
 * await client.lanes.put(session.id, "main");
 * const outcome = await client.prompt(session.id, "main", "Hello!");
 * if (outcome.state === "settled") console.log(outcome.result.messages.at(-1));
 * ```
 *
 * Every method throws ApiRequestError (see `isApiError`) for a non-2xx answer.
 */
export class AgentSessionsClient {
  readonly http: HttpClient;
  /** Tenants and keys (needs `adminToken`). */
  readonly admin: AdminApi;
  readonly sessions: SessionsApi;
  /** The session-wide entry inventory and labels. */
  readonly entries: EntriesApi;
  readonly values: ValuesApi;
  readonly lists: ListsApi;
  readonly branches: BranchesApi;
  /** Skills and prompt templates of a session. */
  readonly resources: ResourcesApi;
  readonly lanes: LanesApi;
  readonly queue: QueueApi;
  /** Operation primitives and the prompt / abort / resume conveniences. */
  readonly operations: OperationsApi;
  /** Tool definitions of a session and client tool results. */
  readonly tools: ToolsApi;
  /** MCP servers of a session, whose tools join the session's tools. */
  readonly mcpServers: McpServersApi;
  /** The tenant's own provider keys. */
  readonly providers: ProvidersApi;
  /** The tenant's webhook endpoints and their delivery logs. */
  readonly webhooks: WebhooksApi;
  /** Schedules of lanes: prompts that start on their own. */
  readonly schedules: SchedulesApi;
  /** The tenant's agents: versioned definitions of model, settings, resources and tools. */
  readonly agents: AgentsApi;
  /** The tenant's own tools, which its agents name: one definition and one signing secret for all sessions. */
  readonly tenantTools: TenantToolsApi;
  /** The tenant's own MCP servers, which its agents name. */
  readonly tenantMcpServers: TenantMcpServersApi;
  /** Export and import of sessions as JSON Lines (docs/data.md). */
  readonly data: DataApi;

  constructor(options: ClientOptions) {
    this.http = new HttpClient(options);
    this.admin = new AdminApi(this.http);
    this.sessions = new SessionsApi(this.http);
    this.data = new DataApi(this.http);
    this.entries = new EntriesApi(this.http);
    this.values = new ValuesApi(this.http);
    this.lists = new ListsApi(this.http);
    this.branches = new BranchesApi(this.http);
    this.resources = new ResourcesApi(this.http);
    this.lanes = new LanesApi(this.http);
    this.queue = new QueueApi(this.http);
    this.operations = new OperationsApi(this.http);
    this.tools = new ToolsApi(this.http);
    this.mcpServers = new McpServersApi(this.http);
    this.providers = new ProvidersApi(this.http);
    this.webhooks = new WebhooksApi(this.http);
    this.schedules = new SchedulesApi(this.http);
    this.agents = new AgentsApi(this.http);
    this.tenantTools = new TenantToolsApi(this.http);
    this.tenantMcpServers = new TenantMcpServersApi(this.http);
  }

  /** `GET /v1/me` → `{ tenantId, keyId, defaultModel, usage }`. */
  me(options: CallOptions = {}): Promise<Me> {
    return me(this.http, options);
  }

  /** `PUT /v1/me/default-model`: the model of new lanes that name none (unless their session sets one). */
  setDefaultModel(model: ModelIdentity, options: CallOptions = {}): Promise<ModelIdentity> {
    return setDefaultModel(this.http, model, options);
  }

  /** `DELETE /v1/me/default-model`. */
  deleteDefaultModel(options: CallOptions = {}): Promise<void> {
    return deleteDefaultModel(this.http, options);
  }

  /** `GET /v1/models` → the model catalog. */
  models(options: CallOptions = {}): Promise<ModelCatalogEntry[]> {
    return models(this.http, options);
  }

  /** `GET /openapi.json`: the generated OpenAPI document (no authentication needed). */
  openApiDocument(options: CallOptions = {}): Promise<JsonObject> {
    return this.http.json({ ...options, method: "GET", path: "/openapi.json" });
  }

  /** `GET /health` → `{ status: "ok" }`. */
  health(options: CallOptions = {}): Promise<{ status: string }> {
    return this.http.json({ ...options, method: "GET", path: "/health" });
  }

  /** `GET /v1/sessions/{sid}/usage?fromSeq&limit` → `{ rows, totals, nextFromSeq }`. */
  usage(sessionId: string, query: UsageQuery = {}, options: CallOptions = {}): Promise<UsagePage> {
    return usage(this.http, sessionId, query, options);
  }

  /** Shorthand for `operations.prompt`. */
  prompt(...args: Parameters<OperationsApi["prompt"]>): ReturnType<OperationsApi["prompt"]> {
    return this.operations.prompt(...args);
  }

  /** Shorthand for `operations.abortCurrent`. */
  abort(...args: Parameters<OperationsApi["abortCurrent"]>): ReturnType<OperationsApi["abortCurrent"]> {
    return this.operations.abortCurrent(...args);
  }

  /** Shorthand for `operations.resumeCurrent`. */
  resume(...args: Parameters<OperationsApi["resumeCurrent"]>): ReturnType<OperationsApi["resumeCurrent"]> {
    return this.operations.resumeCurrent(...args);
  }

  /** `watchLane` with this client's base URL, key and fetch (its REST reads: `olderEntries()`, a refusal's classification). */
  watchLane(sessionId: string, lane: string, options: Omit<WatchLaneOptions, "baseUrl" | "key" | "sessionId" | "lane"> = {}): LaneWatch {
    const key = this.http.key;
    if (key === undefined) throw new TypeError("watchLane needs a client created with a key");
    return watchLane({ ...options, fetch: options.fetch ?? this.http.fetch, baseUrl: this.http.baseUrl, key, sessionId, lane });
  }
}

/** `new AgentSessionsClient(options)`. */
export function createClient(options: ClientOptions): AgentSessionsClient {
  return new AgentSessionsClient(options);
}

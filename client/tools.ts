import type { ToolListing } from "../schema/mcp.ts";
import type { PutProvider, ProviderKeyInfo } from "../schema/providers.ts";
import type { ClientToolResult, ToolCallContext, ToolDefinitionInput, ToolDefinitionReply, ToolDefinitionView } from "../schema/tools.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { lanePath } from "./lanes.ts";
import { sessionPath } from "./sessions.ts";

export type { ClientToolResult, ToolCallContext, ToolDefinitionInput, ToolDefinitionReply, ToolDefinitionView, ProviderKeyInfo, PutProvider };

/**
 * A session's tool definitions (`docs/tools.md`) and the results of client tools. An http tool's
 * signing secret comes back once, from the `put` that creates it; it is never shown again.
 */
export class ToolsApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `GET …/tools` → every tool of the session: its definitions, then its MCP servers' tools (kind `mcp`); no secrets. */
  async list(sessionId: string, options: CallOptions = {}): Promise<ToolDefinitionView[]> {
    return (await this.listing(sessionId, options)).items;
  }

  /** `GET …/tools` whole: the tools and the state of each MCP server (`status`, `lastError`). */
  listing(sessionId: string, options: CallOptions = {}): Promise<ToolListing> {
    return this.http.json({ ...options, method: "GET", path: sessionPath(sessionId, "/tools") });
  }

  /**
   * `PUT …/tools/{name}` → the definition, `created`, and for a created http tool its `secret`
   * (keep it: it verifies the signature of every call). Replacing a definition keeps its secret.
   */
  async put(sessionId: string, name: string, definition: ToolDefinitionInput, options: CallOptions = {}): Promise<ToolDefinitionReply> {
    const response = await this.http.send<Omit<ToolDefinitionReply, "created">>({ ...options, method: "PUT", path: sessionPath(sessionId, `/tools${path(name)}`), body: definition });
    return { ...response.body, created: response.status === 201 };
  }

  /** `DELETE …/tools/{name}` → 204; 404 ToolNotFound, 409 ToolInUse while a lane has it active. */
  async delete(sessionId: string, name: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: sessionPath(sessionId, `/tools${path(name)}`) });
  }

  /**
   * `POST …/lanes/{lane}/operations/{opId}/tool-results/{toolCallId}`: answers a client tool call
   * the run waits for (once: a second answer is 409 ToolResultConflict).
   */
  async submitResult(sessionId: string, lane: string, operationId: string, toolCallId: string, result: ClientToolResult, options: CallOptions = {}): Promise<void> {
    await this.http.send({
      ...options,
      method: "POST",
      path: lanePath(sessionId, lane, `/operations${path(operationId)}/tool-results${path(toolCallId)}`),
      body: result,
    });
  }
}

/** The tenant's own provider keys (`docs/providers.md`): stored sealed, never returned. */
export class ProvidersApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `GET /v1/providers` → configured providers with the last characters of their key. */
  list(options: CallOptions = {}): Promise<ProviderKeyInfo[]> {
    return this.http.json({ ...options, method: "GET", path: "/v1/providers" });
  }

  /** `PUT /v1/providers/{provider}` `{ apiKey, baseUrl? }`: the tenant's key wins over the service's. */
  put(provider: string, body: PutProvider, options: CallOptions = {}): Promise<ProviderKeyInfo> {
    return this.http.json({ ...options, method: "PUT", path: `/v1/providers${path(provider)}`, body });
  }

  /** `DELETE /v1/providers/{provider}` → 204. */
  async delete(provider: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: `/v1/providers${path(provider)}` });
  }
}

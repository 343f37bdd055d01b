import type { McpServerInput, McpServerReply, McpServerSummary, McpServerView, ToolListing } from "../schema/mcp.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { sessionPath } from "./sessions.ts";

export type { McpServerInput, McpServerReply, McpServerSummary, McpServerView, ToolListing };

/**
 * A session's MCP servers (`docs/tools.md` "MCP servers"): remote tool servers whose tools join the
 * session's tools. Header values and bearer tokens go in once and never come back.
 */
export class McpServersApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `GET …/mcp-servers` → every server with its state and cached tools. */
  async list(sessionId: string, options: CallOptions = {}): Promise<McpServerView[]> {
    const body = await this.http.json<{ items: McpServerView[] }>({ ...options, method: "GET", path: sessionPath(sessionId, "/mcp-servers") });
    return body.items;
  }

  /**
   * `PUT …/mcp-servers/{name}` → the server after discovering its tools, and `created`. A discovery
   * that fails still registers it: see `status` and `lastError`.
   */
  async put(sessionId: string, name: string, server: McpServerInput, options: CallOptions = {}): Promise<McpServerReply> {
    const response = await this.http.send<Omit<McpServerReply, "created">>({ ...options, method: "PUT", path: sessionPath(sessionId, `/mcp-servers${path(name)}`), body: server });
    return { ...response.body, created: response.status === 201 };
  }

  /** `POST …/mcp-servers/{name}/refresh` → the server after discovering its tools again. */
  refresh(sessionId: string, name: string, options: CallOptions = {}): Promise<McpServerView> {
    return this.http.json({ ...options, method: "POST", path: sessionPath(sessionId, `/mcp-servers${path(name)}/refresh`) });
  }

  /** `DELETE …/mcp-servers/{name}` → 204; 404 McpServerNotFound, 409 ToolInUse while a lane has one of its tools active. */
  async delete(sessionId: string, name: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: sessionPath(sessionId, `/mcp-servers${path(name)}`) });
  }
}

import { IdSchema } from "../../schema/api.ts";
import { MAX_MCP_SERVER_TOOLS, MAX_SESSION_MCP_SERVERS, McpServerInputSchema, McpServerListSchema, McpServerNameSchema, McpServerViewSchema } from "../../schema/mcp.ts";
import { SESSION_ERRORS, type CatalogRoute } from "./catalog-types.ts";

// spec/API.md MCP server routes: worker/routes/mcp-servers.ts (docs/tools.md "MCP servers").

const SID = { sid: IdSchema };
const SERVER = { ...SID, name: McpServerNameSchema };
const VIEW =
  "`{ name, url, prefix, allow?, replay, timeoutMs, headerNames, status: \"ready\" | \"error\", toolCount, tools: [{ name, remoteName, replay, withdrawn? }], skippedTools: [{ name, reason }], lastRefreshAt?, lastError?: { message, at } }` (header values and the bearer token never appear)";

export const mcpCatalog: readonly CatalogRoute[] = [
  {
    method: "get", path: "/v1/sessions/{sid}/mcp-servers", operationId: "listMcpServers", tag: "Tools", auth: "tenant",
    summary: "The session's MCP servers", description: `At most ${MAX_SESSION_MCP_SERVERS}, by name, each with its state and cached tools.`,
    pathParams: SID,
    responses: { 200: { description: `\`{ items: Server[] }\`, each ${VIEW}`, schema: McpServerListSchema } },
    errors: [...SESSION_ERRORS],
  },
  {
    method: "put", path: "/v1/sessions/{sid}/mcp-servers/{name}", operationId: "putMcpServer", tag: "Tools", auth: "tenant",
    summary: "Register or replace an MCP server (streamable HTTP) and discover its tools",
    description:
      "`url` must be https. Static `headers` and `bearerToken` are stored encrypted and never answered. Each tool the server lists (only those in `allow`, when given; at most " +
      `${MAX_MCP_SERVER_TOOLS}) joins the session's tools as \`prefix\` + its name (default prefix \`{name}_\`). \`replay\` is "never" (default), "safe", or a map by tool name. ` +
      "A discovery that fails still registers the server, with `status: \"error\"` and `lastError`. A new prefix is 409 `ToolInUse` while a lane has one of the server's tools active.",
    pathParams: SERVER, body: McpServerInputSchema,
    example: { url: "https://mcp.example.com/mcp", bearerToken: "secret-token", prefix: "docs_", allow: ["search"], replay: { search: "safe" } },
    responses: { 200: { description: `Replaced: ${VIEW}`, schema: McpServerViewSchema }, 201: { description: `Registered: ${VIEW}`, schema: McpServerViewSchema } },
    errors: [...SESSION_ERRORS, "LimitExceeded", "ToolInUse", "NotConfigured"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}/mcp-servers/{name}", operationId: "deleteMcpServer", tag: "Tools", auth: "tenant",
    summary: "Remove an MCP server and its tools", description: "409 `ToolInUse` while a lane has one of its tools in `activeTools`.",
    pathParams: SERVER,
    responses: { 204: { description: "Removed", content: "none" } },
    errors: [...SESSION_ERRORS, "McpServerNotFound", "ToolInUse"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/mcp-servers/{name}/refresh", operationId: "refreshMcpServer", tag: "Tools", auth: "tenant",
    summary: "Discover an MCP server's tools again now",
    description: "A failed discovery keeps the cached tools and answers `status: \"error\"` with `lastError`.",
    pathParams: SERVER,
    responses: { 200: { description: VIEW, schema: McpServerViewSchema } },
    errors: [...SESSION_ERRORS, "McpServerNotFound"],
  },
];
